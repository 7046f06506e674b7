/**
 * `GET /v1/telemetry[?hostname=H]` (docs/api-v1.md): the latest usage sample of each device, as
 * this API process heard it from the agents on `cyborg.telemetry` (telemetry-feed.ts; in memory
 * only), with each device's uuid, type and vendor read from the database for the hosts shown.
 * A sample whose device the database does not know (not reported yet) is shown with a null uuid.
 */
import type { FastifyInstance } from 'fastify'
import { listDeviceKeys, type DeviceKey } from '../../db/reads/device-keys.js'
import type { QueryOf } from '../schemas/common.js'
import { resource } from '../routing.js'
import type { V1Env } from './env.js'
import { getTelemetry, type HostnameQuery } from './schemas/admin.js'

export function telemetryRoutes(app: FastifyInstance, { db, telemetry }: V1Env): void {
  resource(app, '/telemetry', {
    GET: {
      policy: 'cyborg:telemetry:get',
      doc: getTelemetry,
      handler: async (request) => {
        const { hostname } = request.query as QueryOf<typeof HostnameQuery>
        const now = Date.now()
        const samples = telemetry?.samples(now, hostname) ?? []
        const hosts = [...new Set(samples.map((s) => s.host))]
        const keys = new Map<string, DeviceKey>()
        for (const k of hosts.length === 0 ? [] : await listDeviceKeys(db, hosts))
          keys.set(`${k.host}\n${k.controlPath}`, k)
        const devices = samples.map((s) => {
          const key = keys.get(`${s.host}\n${s.controlPath}`)
          return {
            hostname: s.host,
            control_path: s.controlPath,
            device_uuid: key?.uuid ?? null,
            type: key?.type ?? null,
            vendor: key?.vendor ?? null,
            time: s.time ?? null,
            received_at: new Date(s.receivedAt).toISOString(),
            age_seconds: Math.max(0, Math.round((now - s.receivedAt) / 1000)),
            values: s.values,
          }
        })
        return { devices }
      },
    },
  })
}
