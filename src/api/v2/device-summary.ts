/**
 * `GET /devices/summary` (2.10; docs/api-v2.md): the devices counted by type, lifecycle, status,
 * health and host, and the unhealthy ones (health not ok) with their reason, the newest change
 * first, up to `unhealthy_limit` (default 100) with their total. Three grouped reads whatever the
 * fleet's size (src/db/reads/device-summary.ts): what the dashboard's Fleet page draws instead of
 * reading every device. Guarded by `cyborg:device:get_all`, as the list it summarises. A static
 * path, so it is matched before `/devices/{uuid}`; below 2.10 it is a 404 naming the microversion.
 */
import type { FastifyInstance } from 'fastify'
import { DEFAULT_UNHEALTHY_LIMIT, getDeviceSummary } from '../../db/reads/device-summary.js'
import type { QueryOf } from '../schemas/common.js'
import { resource } from '../routing.js'
import type { V2Env } from './env.js'
import * as docs from './schemas/device-summary.js'

export function deviceSummaryRoutes(app: FastifyInstance, { db }: V2Env): void {
  resource(app, '/devices/summary', {
    GET: {
      policy: 'cyborg:device:get_all',
      doc: docs.getDeviceSummary,
      since: 10,
      handler: async (request) => {
        const q = request.query as QueryOf<typeof docs.DeviceSummaryQuery>
        const limit =
          q.unhealthy_limit === undefined ? DEFAULT_UNHEALTHY_LIMIT : Number(q.unhealthy_limit)
        const s = await getDeviceSummary(db, Math.min(limit, docs.MAX_UNHEALTHY_LIMIT))
        return {
          total: s.total,
          by_type: s.byType,
          by_lifecycle: s.byLifecycle,
          by_status: s.byStatus,
          by_health: s.byHealth,
          hosts: s.hosts,
          unhealthy: {
            total: s.unhealthy.total,
            devices: s.unhealthy.devices.map((d) => ({
              uuid: d.uuid,
              hostname: d.hostname,
              type: d.type,
              health: d.health,
              health_reason: d.healthReason,
              health_updated_at: d.healthUpdatedAt,
              health_since: d.healthSince,
            })),
          },
        }
      },
    },
  })
}
