/**
 * The conductor's plain writes: heartbeats, device profiles, attributes and a device's status.
 * Each re-checks its input (validate.ts) and runs as one write of the group committer; heartbeats
 * go through the heartbeat batcher when there is one (heartbeat-batch.ts). A status that changes
 * writes `accelerator.device.enabled` or `.disabled` in the same transaction.
 */
import type { GroupCommitter } from '../db/group-commit.js'
import type { HeartbeatBatcher } from './heartbeat-batch.js'
import { createAttribute, deleteAttribute } from '../db/attributes.js'
import { createDeviceProfile, deleteDeviceProfiles } from '../db/device-profiles.js'
import { updateDeviceStatus } from '../db/devices.js'
import { getDeviceFacts } from '../db/device-events.js'
import { insertEvents } from '../db/events.js'
import { deviceEvent } from '../domain/events.js'
import { updateHeartbeat } from '../db/services.js'
import { DeviceStatus } from '../domain/inventory.js'
import type { Logger } from '../domain/logger.js'
import type { ConductorRpc } from '../rpc/conductor-rpc.js'
import {
  checkArray,
  checkOneOf,
  checkPositiveInt,
  checkString,
  checkStringMap,
  checkUuid,
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
      const service = {
        host: checkString(req?.host, 'host'),
        binary: checkString(req.binary, 'binary', { max: 64 }),
        version: checkString(req.version, 'version', { max: 64, allowEmpty: true }),
      }
      const hash =
        req.inventoryHash === undefined
          ? undefined
          : checkString(req.inventoryHash, 'inventoryHash', { max: 64 })
      const inventoryCurrent = deps.heartbeats
        ? await deps.heartbeats.beat(
            hash === undefined ? service : { ...service, reportHash: hash },
          )
        : await committer.run((trx) => updateHeartbeat(trx, service, now(), hash))
      return hash === undefined ? undefined : { inventoryCurrent }
    },

    async createDeviceProfile(req) {
      const input = {
        uuid: req?.uuid === undefined ? uuid() : checkUuid(req.uuid, 'uuid'),
        name: checkString(req.name, 'name'),
        description:
          req.description === null
            ? null
            : checkString(req.description, 'description', { max: 65535, allowEmpty: true }),
        groups: checkArray(req.groups, 'groups', { nonEmpty: true }).map((g, i) =>
          checkStringMap(g, `groups[${i}]`),
        ),
      }
      const profile = await committer.run((trx) => createDeviceProfile(trx, input, now()))
      log.debug({ uuid: profile.uuid, name: profile.name }, 'device profile created')
      return profile
    },

    async deleteDeviceProfiles(req) {
      const uuids = checkArray(req?.uuids, 'uuids', { nonEmpty: true }).map((u, i) =>
        checkUuid(u, `uuids[${i}]`),
      )
      await committer.run((trx) => deleteDeviceProfiles(trx, uuids))
      log.debug({ uuids }, 'device profiles deleted')
    },

    async createAttribute(req) {
      const input = {
        deployableId: checkPositiveInt(req?.deployableId, 'deployableId'),
        key: checkString(req.key, 'key'),
        value: checkString(req.value, 'value', { max: 65535, allowEmpty: true }),
      }
      const attribute = { now: now(), uuid: uuid() }
      return committer.run((trx) => createAttribute(trx, input, attribute))
    },

    async deleteAttribute(req) {
      const id = checkUuid(req?.uuid, 'uuid')
      await committer.run((trx) => deleteAttribute(trx, id))
    },

    async setDeviceStatus(req) {
      const id = checkUuid(req?.uuid, 'uuid')
      const status = checkOneOf(req.status, Object.values(DeviceStatus), 'status')
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
