/**
 * `GET /capacity` (2.6, issue 17; docs/capacity.md): attach handles counted per resource class,
 * host and trait set, or per host, resource class or device type (`group_by`), as `total`, `used`,
 * `reserved`, `fenced`, `cleaning` and `free`. Filters `resource_class`, `hostname` and `trait`
 * (repeatable or a comma list: rows whose trait set includes all). Reads only: src/db/capacity.ts,
 * kept for `[api] fleet_cache_ms` (fleet-reads.ts). Below 2.6 the route is a 404 naming the microversion it needs, like
 * `POST /devices/{uuid}/ready`.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import {
  CAPACITY_GROUP_BY,
  summarizeCapacity,
  type CapacityGroupBy,
  type CapacityQuery,
  type CapacityRow,
} from '../../domain/capacity.js'
import { invalidField, NotFoundError } from '../../domain/errors.js'
import { formatTimestamp } from '../../domain/time.js'
import { stringParam, type Query } from '../query.js'
import { resource } from '../routing.js'
import type { V2Env } from './env.js'
import { getCapacity } from './schemas/capacity.js'

/** The lease when `[DEFAULT] service_down_time` is not passed: its default, 60 s. */
const DEFAULT_LEASE_MS = 60_000
/** Placement's names of resource classes and traits: upper case, digits and underscores. */
const NAME_RE = /^[A-Z0-9_]{1,255}$/
const TEXT_MAX = 255

function nameParam(query: Query, name: string): string | undefined {
  const value = stringParam(query, name)
  if (value !== undefined && !NAME_RE.test(value)) {
    throw invalidField(name, `must be 1 to 255 of A-Z, 0-9 and _, got ${JSON.stringify(value)}`)
  }
  return value
}

/** `trait`: repeatable, each a name or a comma list of names. */
function traitParam(query: Query): string[] | undefined {
  const raw = query.trait
  if (raw === undefined) return undefined
  const values = Array.isArray(raw) ? (raw as unknown[]) : [raw]
  const traits = values.flatMap((v) =>
    typeof v === 'string' ? v.split(',').filter((s) => s !== '') : [v],
  )
  for (const t of traits) {
    if (typeof t !== 'string' || !NAME_RE.test(t)) {
      throw invalidField(
        'trait',
        `each must be 1 to 255 of A-Z, 0-9 and _, got ${JSON.stringify(t)}`,
      )
    }
  }
  return [...new Set(traits as string[])]
}

/** Validates the query string; a bad value is a 400 naming its parameter. */
export function parseCapacityQuery(query: Query): Omit<CapacityQuery, 'leaseCutoff'> {
  const out: Omit<CapacityQuery, 'leaseCutoff'> = {}
  const resourceClass = nameParam(query, 'resource_class')
  if (resourceClass !== undefined) out.resourceClass = resourceClass
  const hostname = stringParam(query, 'hostname')
  if (hostname !== undefined) {
    if (hostname.length === 0 || hostname.length > TEXT_MAX)
      throw invalidField('hostname', `must be 1 to ${TEXT_MAX} characters`)
    out.hostname = hostname
  }
  const traits = traitParam(query)
  if (traits !== undefined) out.traits = traits
  const groupBy = stringParam(query, 'group_by')
  if (groupBy !== undefined) {
    if (!(CAPACITY_GROUP_BY as readonly string[]).includes(groupBy))
      throw invalidField('group_by', `must be one of: ${CAPACITY_GROUP_BY.join(', ')}`)
    out.groupBy = groupBy as CapacityGroupBy
  }
  return out
}

const rowView = (r: CapacityRow) => ({
  resource_class: r.resourceClass,
  hostname: r.hostname,
  traits: r.traits,
  device_type: r.deviceType,
  total: r.total,
  used: r.used,
  reserved: r.reserved,
  fenced: r.fenced,
  cleaning: r.cleaning,
  free: r.free,
})

export function capacityRoutes(app: FastifyInstance, { fleet, serviceDownAfterMs }: V2Env): void {
  resource(app, '/capacity', {
    GET: {
      policy: 'cyborg:capacity:get',
      doc: getCapacity,
      handler: async (request: FastifyRequest) => {
        if (request.apiMinor < 6) {
          throw new NotFoundError(
            'GET /v2/capacity needs microversion 2.6 (OpenStack-API-Version: accelerator 2.6)',
            { details: { field: 'OpenStack-API-Version' } },
          )
        }
        const query = parseCapacityQuery(request.query as Query)
        const deployables = await fleet.capacity(query.hostname)
        const lease = serviceDownAfterMs ?? DEFAULT_LEASE_MS
        const leaseCutoff = formatTimestamp(new Date(Date.now() - lease))
        const rows = summarizeCapacity(deployables, { ...query, leaseCutoff })
        return { group_by: query.groupBy ?? null, capacity: rows.map(rowView) }
      },
    },
  })
}
