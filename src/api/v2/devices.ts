/**
 * Devices: `GET /devices` (filters type, vendor, hostname, from 2.5 health; limit, marker, sort_key, sort_dir),
 * `GET /devices/{uuid}`, `POST /devices/{uuid}/disable|enable` (200, no body), and from 2.4
 * `POST /devices/{uuid}/ready` (the operator lifecycle: inactive|error → ready → installed by the
 * host's agent → active | error; 200 with the device as it ended), and from 2.8
 * `POST /devices/{uuid}/clean` (body `{force_in_service?}`, docs/cleaning.md): the conductor asks
 * again for the clean of the device's units left cleaning or failed, or puts them back in service
 * without one (an override in the custody ledger, by the caller); 202 with `{device, units, forced}`.
 * From 2.8 also `POST /devices/{uuid}/configure` (body `{sriov_numvfs}` or `{vgpu_type}`;
 * docs/drivers.md): the conductor re-partitions it; 200 with the layouts before and after.
 * From 2.9 every device shows `device_state` (OpenStack Cyborg 17.0.0's values; docs/compat-2026-2.md).
 * A malformed uuid is answered 404 like an unknown one, without a database round trip.
 */
import type { Static } from '@sinclair/typebox'
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  preValidationHookHandler,
} from 'fastify'
import type { DEVICE_SORT_KEYS } from '../../db/reads/device-reads.js'
import { deviceUnitCounts, getDevice, listDevices } from '../../db/reads/device-reads.js'
import { DriverError, invalidField, NotFoundError } from '../../domain/errors.js'
import { layoutView } from '../../domain/configure-events.js'
import { ApiError } from '../errors.js'
import { isUuidLike } from '../../domain/ids.js'
import type { Device, DeviceStatus } from '../../domain/inventory/inventory.js'
import { markerNotFoundToInvalid, pagingOf } from '../query.js'
import type { QueryOf } from '../schemas/common.js'
import { resource } from '../routing.js'
import type { V2Env } from './env.js'
import { deviceView } from './views.js'
import * as docs from './schemas/devices.js'

const notFound = (uuid: string) =>
  new NotFoundError(`device ${uuid} not found`, { details: { uuid } })

/**
 * Before the body is validated (and after the microversion gate, `since`): an absent body (or
 * `null`, or `""`) is `{}`, since every field is optional (as explain's).
 */
const emptyBodyIsEmptyObject: preValidationHookHandler = (request, _reply, done) => {
  if (request.body === undefined || request.body === null || request.body === '') request.body = {}
  done()
}

export function deviceRoutes(app: FastifyInstance, { db, conductor, baseUrl }: V2Env): void {
  /** The views of `devices` at the request's microversion; from 2.9 their units are counted too. */
  const viewsOf = async (request: FastifyRequest, devices: Device[]) => {
    const base = baseUrl(request)
    const minor = request.apiMinor
    const units =
      minor >= 9
        ? await deviceUnitCounts(
            db,
            devices.map((d) => d.id),
          )
        : undefined
    return devices.map((d) => deviceView(d, base, minor, units?.get(d.id)))
  }

  resource(app, '/devices', {
    GET: {
      policy: 'cyborg:device:get_all',
      doc: docs.listDevices,
      handler: async (request) => {
        const query = request.query as QueryOf<typeof docs.ListDevicesQuery>
        const filter = {
          type: query.type,
          vendor: query.vendor,
          hostname: query.hostname,
          ...(request.apiMinor >= 5 ? { health: query.health } : {}),
          ...pagingOf<(typeof DEVICE_SORT_KEYS)[number]>(query),
        }
        const devices = await listDevices(db, filter).catch((err: unknown) => {
          throw markerNotFoundToInvalid(err)
        })
        return { devices: await viewsOf(request, devices) }
      },
    },
  })

  resource(app, '/devices/:uuid', {
    GET: {
      policy: 'cyborg:device:get_one',
      doc: docs.getDevice,
      handler: async (request: FastifyRequest) => {
        const { uuid } = request.params as { uuid: string }
        if (!isUuidLike(uuid)) throw notFound(uuid)
        const [view] = await viewsOf(request, [await getDevice(db, uuid)])
        return view
      },
    },
  })

  const setStatus =
    (status: DeviceStatus) => async (request: FastifyRequest, reply: FastifyReply) => {
      const { uuid } = request.params as { uuid: string }
      if (!isUuidLike(uuid)) throw notFound(uuid)
      await conductor.setDeviceStatus({ uuid, status })
      // 200 with no body, as OpenStack Cyborg answers.
      return reply.send()
    }
  resource(app, '/devices/:uuid/disable', {
    POST: {
      policy: 'cyborg:device:disable',
      doc: docs.setDeviceStatus('disable'),
      handler: setStatus('maintaining'),
    },
  })
  resource(app, '/devices/:uuid/enable', {
    POST: {
      policy: 'cyborg:device:enable',
      doc: docs.setDeviceStatus('enable'),
      handler: setStatus('enabled'),
    },
  })
  resource(app, '/devices/:uuid/ready', {
    POST: {
      policy: 'cyborg:device:ready',
      doc: docs.readyDevice,
      since: 4,
      handler: async (request: FastifyRequest) => {
        const { uuid } = request.params as { uuid: string }
        if (!isUuidLike(uuid)) throw notFound(uuid)
        const [view] = await viewsOf(request, [await conductor.markDeviceReady({ uuid })])
        return view
      },
    },
  })
  resource(app, '/devices/:uuid/clean', {
    POST: {
      policy: 'cyborg:device:clean',
      doc: docs.cleanDevice,
      since: 8,
      preValidation: emptyBodyIsEmptyObject,
      schema: { body: docs.CleanDeviceBody },
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        const { uuid } = request.params as { uuid: string }
        if (!isUuidLike(uuid)) throw notFound(uuid)
        const body = request.body as Static<typeof docs.CleanDeviceBody>
        const outcome = await conductor.cleanDevice({
          uuid,
          force: body.force_in_service ?? false,
          userId: request.ctx.userId,
          projectId: request.ctx.projectId,
        })
        return reply
          .code(202)
          .send({ device: outcome.device, units: outcome.units, forced: outcome.forced })
      },
    },
  })
  resource(app, '/devices/:uuid/configure', {
    POST: {
      policy: 'cyborg:device:configure',
      doc: docs.configureDevice,
      since: 8,
      schema: { body: docs.ConfigureDeviceBody },
      handler: async (request: FastifyRequest) => {
        const { uuid } = request.params as { uuid: string }
        if (!isUuidLike(uuid)) throw notFound(uuid)
        const body = request.body as Static<typeof docs.ConfigureDeviceBody>
        if ((body.sriov_numvfs === undefined) === (body.vgpu_type === undefined))
          throw invalidField('body', 'give exactly one of sriov_numvfs and vgpu_type')
        const change =
          body.sriov_numvfs !== undefined
            ? { sriovNumvfs: body.sriov_numvfs }
            : { vgpuType: body.vgpu_type! }
        const out = await conductor
          .configureDevice({
            uuid,
            change,
            userId: request.ctx.userId,
            projectId: request.ctx.projectId,
          })
          .catch((err: unknown) => {
            // The host refused part-way (not this service): a bad gateway, as a failed upstream is.
            if (err instanceof DriverError) throw new ApiError(502, err.message)
            throw err
          })
        return {
          device: out.device,
          operation: out.operation,
          changed: out.changed,
          previous: layoutView(out.previous),
          applied: layoutView(out.applied),
        }
      },
    },
  })
}
