/**
 * `GET /v1/backend_services?hostname=&backend=`: the services each backend (device) offers, as last
 * discovered, read from the inventory (service-names.ts derives them from resource class and
 * traits). `backend` is a device uuid; an unknown one is a 404 naming it.
 */
import type { FastifyInstance } from 'fastify'
import { listBackends, type Backend } from '../../db/reads/backend-services.js'
import { NotFoundError } from '../../domain/errors.js'
import type { QueryOf } from '../schemas/common.js'
import { resource } from '../routing.js'
import { controlPathText } from '../../domain/control-path.js'
import { deriveServices } from './service-names.js'
import type { V1Env } from './env.js'
import type { BackendServicesQuery } from './schemas/admin.js'
import { listBackendServices } from './schemas/admin.js'

/** One row per service of each deployable of each backend. */
export function backendServiceRows(backends: readonly Backend[]) {
  return backends.flatMap((b) =>
    b.deployables.flatMap((d) => {
      const rc = d.attributes.find((a) => a.key === 'rc')?.value
      const traits = d.attributes.filter((a) => a.key.startsWith('trait')).map((a) => a.value)
      return deriveServices({ rc, traits, bitstreamId: d.bitstreamId, deviceType: b.type }).map(
        (s) => ({
          hostname: b.hostname,
          backend: b.uuid,
          backend_type: b.type,
          vendor: b.vendor,
          model: b.model,
          address: controlPathText(b.controlPath),
          lifecycle: b.lifecycle,
          deployable: d.name,
          deployable_uuid: d.uuid,
          driver: d.driverName,
          service: s.service,
          description: s.description,
          resource_class: rc ?? b.type,
          units: d.numAccelerators,
          removal_pending: d.removalPending,
        }),
      )
    }),
  )
}

export function backendServiceRoutes(app: FastifyInstance, { db }: V1Env): void {
  resource(app, '/backend_services', {
    GET: {
      policy: 'cyborg:backend_service:get_all',
      doc: listBackendServices,
      handler: async (request) => {
        const { hostname, backend } = request.query as QueryOf<typeof BackendServicesQuery>
        const filter = {
          ...(hostname === undefined ? {} : { hostname }),
          ...(backend === undefined ? {} : { uuid: backend.toLowerCase() }),
        }
        const backends = await listBackends(db, filter)
        if (backend !== undefined && backends.length === 0) {
          throw new NotFoundError(
            `backend ${backend} not found${hostname === undefined ? '' : ` on host ${hostname}`}`,
            {
              code: 'DEVICE_NOT_FOUND',
              details: { field: 'backend', uuid: backend },
            },
          )
        }
        return { services: backendServiceRows(backends) }
      },
    },
  })
}
