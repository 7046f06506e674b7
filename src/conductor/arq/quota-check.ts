/**
 * Quota on the binds the conductor places itself (docs/quota.md), in three steps around the
 * claim's transaction:
 * 1. before it, the limits of the projects concerned (Keystone, cached: never inside a
 *    transaction);
 * 2. in it, before any claim, the projects' quota locks (src/db/reads/quota-usage.ts), in sorted order;
 * 3. in it, after the claims, the projects' usage counted afresh (the new claims included) against
 *    their limits: one over makes the whole operation a 403 and its transaction rolls back.
 * Only the resource classes this operation claimed are judged, so a project already over a limit
 * lowered since (on another class) is not refused what it is within.
 */
import type { BindTarget } from '../../db/arq-targets.js'
import type { ReadDb } from '../../db/core/connection.js'
import type { WriteTrx } from '../../db/core/group-commit.js'
import { claimQuotaLock, countQuotaUsage } from '../../db/quota-lock.js'
import { ConflictError } from '../../domain/errors.js'
import type { Arq } from '../../domain/arq.js'
import type { ArqBindRequest } from '../../rpc/conductor-rpc.js'
import { rcOf } from './arq-claim.js'
import { v2Arq } from './arq-internals.js'
import { overQuota, quotaExceeded, type Limits, type LimitSource } from '../../domain/quota.js'

/** One unit claimed by the operation: whose, and of which resource class. */
export interface QuotaClaim {
  projectId: string
  resourceClass: string
}

export interface QuotaGate {
  /** Step 2: the projects' locks. */
  lock(trx: WriteTrx, now: string): Promise<void>
  /** Step 3: throws a 403 (ForbiddenError, OVER_QUOTA) when a claim took a project over. */
  enforce(trx: WriteTrx, claims: readonly QuotaClaim[]): Promise<void>
}

/** Step 1: the gate for `projects`, or undefined when quota is off or no project is concerned. */
export async function quotaGate(
  source: LimitSource | undefined,
  projects: Iterable<string | null | undefined>,
): Promise<QuotaGate | undefined> {
  if (!source) return undefined
  const wanted = [...new Set([...projects].filter((p): p is string => !!p))].sort()
  if (wanted.length === 0) return undefined
  const limits = new Map<string, Limits>(
    await Promise.all(wanted.map(async (p) => [p, await source.limitsOf(p)] as const)),
  )
  return {
    async lock(trx, now) {
      for (const p of wanted) await claimQuotaLock(trx, p, now)
    },
    async enforce(trx, claims) {
      const byProject = new Map<string, Map<string, number>>()
      for (const { projectId, resourceClass } of claims) {
        const classes = byProject.get(projectId) ?? new Map<string, number>()
        classes.set(resourceClass, (classes.get(resourceClass) ?? 0) + 1)
        byProject.set(projectId, classes)
      }
      for (const [projectId, claimed] of [...byProject].sort(([a], [b]) => a.localeCompare(b))) {
        const projectLimits = limits.get(projectId)
        if (!projectLimits)
          throw new ConflictError(`the project of a request changed while it was being bound`, {
            code: 'ARQ_BAD_STATE',
          })
        const usage = await countQuotaUsage(trx, projectId, [...claimed.keys()])
        const judged = new Map([...claimed.keys()].map((rc) => [rc, usage.get(rc) ?? 0]))
        const over = overQuota(projectId, projectLimits, judged)
        if (over) throw quotaExceeded(over, claimed.get(over.resource.slice('class:'.length))!)
      }
    },
  }
}

/** A bind's projects: the binding's, else the request's (read before the transaction). */
export async function bindQuota(
  source: LimitSource | undefined,
  db: ReadDb,
  bindings: Readonly<Record<string, ArqBindRequest>>,
): Promise<QuotaGate | undefined> {
  if (!source) return undefined
  const standalone = Object.entries(bindings).filter(([, b]) => !b.deviceRpUuid)
  const projects = await Promise.all(
    standalone.map(async ([uuid, b]) => b.projectId ?? (await v2Arq(db, uuid)).projectId),
  )
  return quotaGate(source, projects)
}

/** What a standalone bind of `arq` on `target` claims ([] for a Nova bind or no project/class). */
export function bindClaims(arq: Arq, binding: ArqBindRequest, target: BindTarget): QuotaClaim[] {
  const projectId = binding.projectId ?? arq.projectId
  const resourceClass = rcOf(target)
  if (binding.deviceRpUuid || !projectId || !resourceClass) return []
  return [{ projectId, resourceClass }]
}
