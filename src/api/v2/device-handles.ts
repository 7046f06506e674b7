/**
 * `GET /devices/{uuid}/attach_handles` (microversion 2.10): a device's units with their state and
 * holder, for the dashboard's device page. Read-only; policy `cyborg:device:get_one`, as the device.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { listDeviceHandles } from '../../db/reads/device-handles.js'
import { NotFoundError } from '../../domain/errors.js'
import { isUuidLike } from '../../domain/ids.js'
import { resource } from '../routing.js'
import type { V2Env } from './env.js'
import { listDeviceHandles as doc } from './schemas/device-handles.js'

const notFound = (uuid: string) =>
  new NotFoundError(`device ${uuid} not found`, { details: { uuid } })

export function deviceHandleRoutes(app: FastifyInstance, { db }: V2Env): void {
  resource(app, '/devices/:uuid/attach_handles', {
    GET: {
      policy: 'cyborg:device:get_one',
      doc,
      since: 10,
      handler: async (request: FastifyRequest) => {
        const { uuid } = request.params as { uuid: string }
        if (!isUuidLike(uuid)) throw notFound(uuid)
        const handles = await listDeviceHandles(db, uuid)
        if (handles === undefined) throw notFound(uuid)
        return {
          attach_handles: handles.map((h) => ({
            uuid: h.uuid,
            deployable_id: h.deployableId,
            deployable_uuid: h.deployableUuid,
            deployable_name: h.deployableName,
            attach_type: h.attachType,
            attach_info: h.attachInfo,
            in_use: h.inUse,
            state: h.state,
            clean_state: h.cleanState,
            clean_since: h.cleanSince,
            reconfig_kind: h.reconfigKind,
            arq_uuid: h.arqUuid,
            arq_state: h.arqState,
            instance_uuid: h.instanceUuid,
            project_id: h.projectId,
          })),
        }
      },
    },
  })
}
