/**
 * `GET /capacity` (2.6, issue 17; docs/capacity.md): attach handles counted per resource class,
 * host and trait set, or per host, resource class or device type (`group_by`), as `total`, `used`,
 * `reserved`, `fenced`, `cleaning` and `free`. Filters `resource_class`, `hostname` and `trait`
 * (repeatable or a comma list: rows whose trait set includes all). Reads only: src/db/reads/capacity.ts,
 * kept as fleet-reads.ts says (never stale by default). The query string is checked by its schema
 * (schemas/capacity.ts). Below 2.6 the route is a 404 naming the microversion it needs (`since`).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import {
  summarizeCapacity,
  type CapacityGroupBy,
  type CapacityQuery,
  type CapacityRow,
} from '../../domain/capacity.js'
import { formatTimestamp } from '../../domain/time.js'
import { commaList } from '../query.js'
import type { QueryOf } from '../schemas/common.js'
import { resource } from '../routing.js'
import type { V2Env } from './env.js'
import type { CapacityQueryString } from './schemas/capacity.js'
import { getCapacity } from './schemas/capacity.js'
import { keptAnswer } from './fleet-memo.js'

/** The lease when `[DEFAULT] service_down_time` is not passed: its default, 60 s. */
const DEFAULT_LEASE_MS = 60_000

/** The checked query string as the summary takes it: `trait` lists flattened and de-duplicated. */
export function capacityQueryOf(
  query: QueryOf<typeof CapacityQueryString>,
): Omit<CapacityQuery, 'leaseCutoff'> {
  const out: Omit<CapacityQuery, 'leaseCutoff'> = {}
  if (query.resource_class !== undefined) out.resourceClass = query.resource_class
  if (query.hostname !== undefined) out.hostname = query.hostname
  if (query.trait !== undefined) {
    const traits = [query.trait].flat().flatMap((v) => commaList(v) ?? [])
    out.traits = [...new Set(traits)]
  }
  if (query.group_by !== undefined) out.groupBy = query.group_by as CapacityGroupBy
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
      since: 6,
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        const query = capacityQueryOf(request.query as QueryOf<typeof CapacityQueryString>)
        const deployables = await fleet.capacity(query.hostname)
        const lease = serviceDownAfterMs ?? DEFAULT_LEASE_MS
        const leaseCutoff = formatTimestamp(new Date(Date.now() - lease))
        // The same read, question and lease verdicts: the same bytes (fleet-memo.ts).
        const body = keptAnswer({
          read: deployables,
          beats: () => deployables.map((d) => d.agentLastSeen),
          question: JSON.stringify(query),
          leaseCutoff,
          compute: () => {
            const rows = summarizeCapacity(deployables, { ...query, leaseCutoff })
            return JSON.stringify({ group_by: query.groupBy ?? null, capacity: rows.map(rowView) })
          },
        })
        return reply.type('application/json; charset=utf-8').send(body)
      },
    },
  })
}
