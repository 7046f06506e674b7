/** What every v2 route module gets: the read-only database, the conductor and the link base. */
import type { FastifyRequest } from 'fastify'
import type { ConductorRpc } from '../../rpc/conductor-rpc.js'
import type { LimitSource } from '../../domain/quota.js'
import type { Db } from '../types.js'
import type { FleetReads } from './fleet-reads.js'
import type { Enforcer } from '../../policy/index.js'
import type { EventHub } from './event-hub.js'

export interface V2Env {
  db: Db
  conductor: ConductorRpc
  /** The base URL of links for this request (no trailing slash). */
  baseUrl: (request: FastifyRequest) => string
  /** `[api] max_arqs_per_request`. */
  maxArqsPerRequest: number
  /** `[DEFAULT] service_down_time` in ms: an agent silent this long is past its lease (explain). */
  serviceDownAfterMs?: number
  /** `[quota] driver = unified_limits`: Keystone limits, for quota and explain (docs/quota.md). */
  quota?: LimitSource | undefined
  /** Capacity's and explain's fleet reads, cached for `[api] fleet_cache_ms`. */
  fleet: FleetReads
  /** The policy enforcer, for the rules a handler checks itself (which events a caller sees). */
  enforcer: Pick<Enforcer, 'enforce'>
  /** The process's one poller of the event outbox, for `GET /v2/events/stream`. */
  events: EventHub
}
