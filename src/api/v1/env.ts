/** What every v1 route module gets: the read-only database, the conductor and the link base. */
import type { FastifyRequest } from 'fastify'
import type { ConductorRpc } from '../../rpc/conductor-rpc.js'
import type { Db } from '../types.js'
import type { TelemetryStore } from '../../domain/telemetry-store.js'

export interface V1Env {
  db: Db
  /** Every v1 write goes to the conductor. */
  conductor: ConductorRpc
  /** The base URL of links for this request (no trailing slash). */
  baseUrl: (request: FastifyRequest) => string
  /** `GET /v1/status` shows a process down after this long without a heartbeat. @default 60000 */
  serviceDownAfterMs?: number
  /** The agents' device telemetry this process heard (`GET /v1/telemetry`). @default none */
  telemetry?: TelemetryStore
}
