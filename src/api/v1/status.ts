/**
 * `GET /v1/status`: the health of the Cyborg processes (api, conductors, agents) from their
 * heartbeats in the services table. A process is `down` when its last heartbeat is older than
 * `serviceDownAfterMs` (by default twice the heartbeat period plus one RPC timeout: 150 s).
 */
import type { FastifyInstance } from 'fastify'
import { listServices } from '../../db/reads/service-reads.js'
import { resource } from '../routing.js'
import type { V1Env } from './env.js'
import { getStatus } from './schemas/admin.js'

/** The default `[DEFAULT] service_down_time` (60 s): every process beats each `report_interval` (10 s). */
export const DEFAULT_SERVICE_DOWN_AFTER_MS = 60_000

export function statusRoutes(
  app: FastifyInstance,
  { db, serviceDownAfterMs = DEFAULT_SERVICE_DOWN_AFTER_MS }: V1Env,
): void {
  resource(app, '/status', {
    GET: {
      policy: 'cyborg:status:get',
      doc: getStatus,
      handler: async () => {
        const now = Date.now()
        const services = (await listServices(db)).map((s) => {
          const age = Math.max(0, now - Date.parse(s.lastSeen))
          return {
            host: s.host,
            binary: s.binary,
            version: s.version,
            state: age > serviceDownAfterMs ? 'down' : 'up',
            last_seen: s.lastSeen,
            seconds_since_last_seen: Math.round(age / 1000),
          }
        })
        return { services, down_after_seconds: serviceDownAfterMs / 1000 }
      },
    },
  })
}
