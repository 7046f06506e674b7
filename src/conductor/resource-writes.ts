/**
 * The conductor's plain writes: heartbeats, device profiles, attributes and a device's status.
 * Each re-checks its input (validate.ts) and runs as one write of the group committer; heartbeats
 * go through the heartbeat batcher when there is one (heartbeat-batch.ts). A status that changes
 * writes `accelerator.device.enabled` or `.disabled` in the same transaction.
 */
import type { GroupCommitter } from '../db/core/group-commit.js'
import type { HeartbeatBatcher } from './heartbeat-batch.js'
import { createAttribute, deleteAttribute } from '../db/attributes.js'
import { createDeviceProfile, deleteDeviceProfiles } from '../db/device-profiles.js'
import { updateDeviceStatus } from '../db/devices.js'
import { getDeviceFacts } from '../db/outbox/device-events.js'
import { insertEvents } from '../db/outbox/events.js'
import { deviceEvent } from '../domain/events.js'
import { updateHeartbeat } from '../db/service-rows.js'
import { DeviceStatus } from '../domain/inventory/inventory.js'
import type { Logger } from '../domain/logger.js'
import type { ConductorRpc } from '../rpc/conductor-rpc.js'
import {
  checkAttributeCreate,
  checkDeviceProfileCreate,
  checkDeviceStatus,
  checkHeartbeat,
  checkUuidRequest,
  checkUuidsRequest,
} from './validate.js'

export interface ResourceWriteDeps {
  committer: Pick<GroupCommitter, 'run'>
  log: Logger
  now: () => string
  uuid: () => string
  /** After a status change: bring Placement in step with the device's host. */
  syncPlacement: (host: string) => Promise<unknown>
  /** Coalesces heartbeats (heartbeat-batch.ts); without it each is one write of the committer. */
  heartbeats?: Pick<HeartbeatBatcher, 'beat'>
}

type ResourceWrites = Pick<
  ConductorRpc,
  | 'heartbeat'
  | 'createDeviceProfile'
  | 'deleteDeviceProfiles'
  | 'createAttribute'
  | 'deleteAttribute'
  | 'setDeviceStatus'
>

export function createResourceWrites(deps: ResourceWriteDeps): ResourceWrites {
  const { committer, log, now, uuid } = deps
  return {
    async heartbeat(req) {
      const { host, binary, version, inventoryHash: hash } = checkHeartbeat(req)
      const service = { host, binary, version }
      const inventoryCurrent = deps.heartbeats
        ? await deps.heartbeats.beat(
            hash === undefined ? service : { ...service, reportHash: hash },
          )
        : await committer.run((trx) => updateHeartbeat(trx, service, now(), hash))
      return hash === undefined ? undefined : { inventoryCurrent }
    },

    async createDeviceProfile(req) {
      const checked = checkDeviceProfileCreate(req)
      const input = {
        uuid: checked.uuid ?? uuid(),
        name: checked.name,
        description: checked.description,
        groups: checked.groups,
      }
      const profile = await committer.run((trx) => createDeviceProfile(trx, input, now()))
      log.debug({ uuid: profile.uuid, name: profile.name }, 'device profile created')
      return profile
    },

    async deleteDeviceProfiles(req) {
      const { uuids } = checkUuidsRequest(req)
      await committer.run((trx) => deleteDeviceProfiles(trx, uuids))
      log.debug({ uuids }, 'device profiles deleted')
    },

    async createAttribute(req) {
      const { deployableId, key, value } = checkAttributeCreate(req)
      const input = { deployableId, key, value }
      const attribute = { now: now(), uuid: uuid() }
      return committer.run((trx) => createAttribute(trx, input, attribute))
    },

    async deleteAttribute(req) {
      const id = checkUuidRequest(req).uuid
      await committer.run((trx) => deleteAttribute(trx, id))
    },

    async setDeviceStatus(req) {
      const { uuid: id, status } = checkDeviceStatus(req)
      const device = await committer.run(async (trx) => {
        const at = now()
        const before = await getDeviceFacts(trx, id)
        const saved = await updateDeviceStatus(trx, id, status, at)
        if (before?.status !== saved.status) {
          const action = saved.status === DeviceStatus.enabled ? 'enabled' : 'disabled'
          await insertEvents(trx, [deviceEvent(action, saved, at)])
        }
        return saved
      })
      log.info({ uuid: id, status }, 'device status set')
      await deps.syncPlacement(device.hostname)
      return device
    },
  }
}
