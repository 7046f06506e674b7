/**
 * Quota on the binds Cyborg places itself (docs/quota.md): Keystone unified limits of the
 * accelerator service, one resource per resource class named as Nova names it (`class:FPGA`),
 * against the units a project holds through standalone binds and v1 attaches. Pure: the limits come
 * through the `LimitSource` port (src/openstack/unified-limits.ts), usage is counted in the claim's
 * transaction (src/db/reads/quota-usage.ts).
 */
import { ForbiddenError } from './errors.js'

/** The unified-limits resource name of a resource class. */
export const quotaResource = (resourceClass: string) => `class:${resourceClass}`

/** A project's limits by resource name; a resource with none is unlimited. */
export type Limits = ReadonlyMap<string, number>

/** Where limits come from (Keystone unified limits, cached). */
export interface LimitSource {
  /** The limits of `projectId`: its project limits over the registered defaults. */
  limitsOf(projectId: string): Promise<Limits>
}

/** A project's standing on one resource. */
export interface QuotaStanding {
  projectId: string
  resource: string
  limit: number
  inUse: number
}

/** Why one more unit of `s` would be over its limit, in the explain rule's words; undefined: it fits. */
export function quotaReason(s: QuotaStanding, wanted = 1): string | undefined {
  if (s.inUse + wanted <= s.limit) return undefined
  return `project ${s.projectId} has ${s.inUse} of its ${s.limit} ${s.resource} in use (quota); release one or ask for a higher limit`
}

/**
 * The first resource over its limit once `usage` (units held, by resource class, counting the
 * claim being checked) is in place, or undefined when all are within.
 */
export function overQuota(
  projectId: string,
  limits: Limits,
  usage: ReadonlyMap<string, number>,
): QuotaStanding | undefined {
  for (const [rc, inUse] of [...usage].sort(([a], [b]) => a.localeCompare(b))) {
    const resource = quotaResource(rc)
    const limit = limits.get(resource)
    if (limit !== undefined && inUse > limit) return { projectId, resource, limit, inUse }
  }
  return undefined
}

/** The 403 of a bind or attach that would take a project over a limit. */
export function quotaExceeded(s: QuotaStanding, wanted: number): ForbiddenError {
  const before = s.inUse - wanted
  return new ForbiddenError(
    `Quota exceeded for ${s.resource} in project ${s.projectId}: limit ${s.limit}, in use ${before}, requested ${wanted}`,
    {
      code: 'OVER_QUOTA',
      details: {
        rule: 'quota',
        resource: s.resource,
        limit: s.limit,
        in_use: before,
        requested: wanted,
        project_id: s.projectId,
      },
    },
  )
}

/** A project's standing by resource class, for the explain rule; undefined where no limit applies. */
export function standingOf(
  projectId: string,
  limits: Limits,
  usage: ReadonlyMap<string, number>,
): (resourceClass: string | undefined) => QuotaStanding | undefined {
  return (rc) => {
    if (rc === undefined) return undefined
    const resource = quotaResource(rc)
    const limit = limits.get(resource)
    return limit === undefined
      ? undefined
      : { projectId, resource, limit, inUse: usage.get(rc) ?? 0 }
  }
}

/** One row of `cyborg quota show`: a resource with its limit (null: none) and the units in use. */
export interface QuotaRow {
  resource: string
  limit: number | null
  inUse: number
}

/** The rows of a project's quota: every resource that has a limit or is in use, by name. */
export function quotaRows(limits: Limits, usage: ReadonlyMap<string, number>): QuotaRow[] {
  const names = new Set([...limits.keys(), ...[...usage.keys()].map(quotaResource)])
  return [...names].sort().map((resource) => ({
    resource,
    limit: limits.get(resource) ?? null,
    inUse: resource.startsWith('class:') ? (usage.get(resource.slice(6)) ?? 0) : 0,
  }))
}
