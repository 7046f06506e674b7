/**
 * `POST /device_profiles/{name_or_uuid}/explain` (2.6, issue 17): for each request group of the
 * profile, every deployable of one host (body `hostname`) or of the fleet, with the first rule
 * that rules it out or `fits` (src/domain/explain.ts, the rules a standalone bind applies). Reads
 * only: the candidates come from src/db/explain.ts in three queries. The body is optional:
 * `{hostname?, project_id?}`; `project_id` is for the quota rule, which is not enforced yet.
 * Below 2.6 the route is a 404 naming the microversion it needs, like `POST /devices/{uuid}/ready`.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { listExplainCandidates, type ExplainRow } from '../../db/explain.js'
import { explainGroups, judge, ruleRank, type ExplainGroup } from '../../domain/explain.js'
import { invalidField, NotFoundError } from '../../domain/errors.js'
import { formatTimestamp } from '../../domain/time.js'
import { resource } from '../routing.js'
import { resolveDeviceProfile } from './device-profiles.js'
import type { V2Env } from './env.js'

/** The lease when `[DEFAULT] service_down_time` is not passed: its default, 60 s. */
const DEFAULT_LEASE_MS = 60_000
const BODY_FIELDS = new Set(['hostname', 'project_id'])
const TEXT_MAX = 255

export interface ExplainBody {
  hostname?: string
  projectId?: string
}

function text(body: Record<string, unknown>, field: string): string | undefined {
  const value = body[field]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string') throw invalidField(field, `expected a string, got ${typeof value}`)
  if (value.length === 0 || value.length > TEXT_MAX) {
    throw invalidField(field, `must be 1 to ${TEXT_MAX} characters`)
  }
  return value
}

/** Validates the optional body: absent, or an object with `hostname` and `project_id` strings. */
export function parseExplainBody(body: unknown): ExplainBody {
  if (body === undefined || body === null || body === '') return {}
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw invalidField('body', 'expected a JSON object with hostname and project_id, both optional')
  }
  const fields = body as Record<string, unknown>
  for (const key of Object.keys(fields)) {
    if (!BODY_FIELDS.has(key))
      throw invalidField(key, 'unknown field (allowed: hostname, project_id)')
  }
  const out: ExplainBody = {}
  const hostname = text(fields, 'hostname')
  const projectId = text(fields, 'project_id')
  if (hostname !== undefined) out.hostname = hostname
  if (projectId !== undefined) out.projectId = projectId
  return out
}

/** One group's verdicts: fits first, then by how early the rule that stopped them comes. */
function explainGroup(group: ExplainGroup, rows: ExplainRow[], leaseCutoff: string) {
  const candidates = rows.map((row) => {
    const { rule, reason } = judge(row, group, { leaseCutoff })
    return {
      deployable_uuid: row.deployableUuid,
      deployable_name: row.name,
      hostname: row.hostname,
      device_uuid: row.deviceUuid,
      rule,
      reason,
      free_units: row.handles.free,
    }
  })
  const order = (rule: (typeof candidates)[number]['rule']) =>
    rule === 'fits' ? -1 : ruleRank(rule)
  candidates.sort((a, b) => order(a.rule) - order(b.rule))
  return {
    group_id: group.groupId,
    resource_class: group.resourceClass,
    required_traits: group.requiredTraits,
    forbidden_traits: group.forbiddenTraits,
    fits: candidates.filter((c) => c.rule === 'fits').length,
    candidates,
  }
}

export function explainRoutes(app: FastifyInstance, { db, serviceDownAfterMs }: V2Env): void {
  resource(app, '/device_profiles/:value/explain', {
    POST: {
      policy: 'cyborg:device_profile:explain',
      handler: async (request: FastifyRequest) => {
        const { value } = request.params as { value: string }
        if (request.apiMinor < 6) {
          throw new NotFoundError(
            `POST /v2/device_profiles/${value}/explain needs microversion 2.6 (OpenStack-API-Version: accelerator 2.6)`,
            { details: { field: 'OpenStack-API-Version' } },
          )
        }
        const { hostname } = parseExplainBody(request.body)
        const profile = await resolveDeviceProfile(db, value)
        const rows = await listExplainCandidates(db, hostname)
        const lease = serviceDownAfterMs ?? DEFAULT_LEASE_MS
        const cutoff = formatTimestamp(new Date(Date.now() - lease))
        return {
          device_profile: { uuid: profile.uuid, name: profile.name },
          hostname: hostname ?? null,
          groups: explainGroups(profile.groups).map((g) => explainGroup(g, rows, cutoff)),
        }
      },
    },
  })
}
