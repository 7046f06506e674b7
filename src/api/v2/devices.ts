/**
 * Devices: `GET /devices` (filters type, vendor, hostname; limit, marker, sort_key, sort_dir),
 * `GET /devices/{uuid}`, and `POST /devices/{uuid}/disable|enable` (200, no body).
 * A malformed uuid is answered 404 like an unknown one, without a database round trip.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { DEVICE_SORT_KEYS, getDevice, listDevices } from '../../db/devices.js'
import { NotFoundError } from '../../domain/errors.js'
import { isUuidLike } from '../../domain/device-profile.js'
import type { DeviceStatus } from '../../domain/inventory.js'
import { markerNotFoundToInvalid, pagingParams, stringParam, type Query } from '../query.js'
import { resource } from '../routing.js'
import type { V2Env } from './env.js'
import { deviceView } from './views.js'

const notFound = (uuid: string) => new NotFoundError(`device ${uuid} not found`, { details: { uuid } })

export function deviceRoutes(app: FastifyInstance, { db, conductor, baseUrl }: V2Env): void {
  resource(app, '/devices', {
    GET: {
      handler: async (request) => {
        const query = request.query as Query
        const filter = {
          type: stringParam(query, 'type'),
          vendor: stringParam(query, 'vendor'),
          hostname: stringParam(query, 'hostname'),
          ...pagingParams(query, DEVICE_SORT_KEYS),
        }
        const devices = await listDevices(db, filter).catch((err: unknown) => {
          throw markerNotFoundToInvalid(err)
        })
        const base = baseUrl(request)
        const withStatus = request.apiMinor >= 3
        return { devices: devices.map((d) => deviceView(d, base, withStatus)) }
      },
    },
  })

  resource(app, '/devices/:uuid', {
    GET: {
      handler: async (request: FastifyRequest) => {
        const { uuid } = request.params as { uuid: string }
        if (!isUuidLike(uuid)) throw notFound(uuid)
        return deviceView(await getDevice(db, uuid), baseUrl(request), request.apiMinor >= 3)
      },
    },
  })

  const setStatus = (status: DeviceStatus) => async (request: FastifyRequest, reply: FastifyReply) => {
    const { uuid } = request.params as { uuid: string }
    if (!isUuidLike(uuid)) throw notFound(uuid)
    await conductor.setDeviceStatus({ uuid, status })
    // 200 with no body, as OpenStack Cyborg answers.
    return reply.send()
  }
  resource(app, '/devices/:uuid/disable', { POST: { handler: setStatus('maintaining') } })
  resource(app, '/devices/:uuid/enable', { POST: { handler: setStatus('enabled') } })
}
