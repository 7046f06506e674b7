/**
 * The conductor (seed 002): the single writer. Every write goes through one group committer, so
 * writes that arrive together share one transaction (the "save out rate" of the seed), and every
 * input is re-checked before it reaches the database.
 */
import type { DatabaseHandle } from '../db/connection.js'
import { createGroupCommitter } from '../db/group-commit.js'
import { syncHostInventory } from '../db/inventory-sync.js'
import { getReportHash, recordHeartbeat, setReportHash } from '../db/services.js'
import { createDeviceProfile, deleteDeviceProfiles } from '../db/device-profiles.js'
import { createAttribute, deleteAttribute } from '../db/attributes.js'
import { setDeviceStatus } from '../db/devices.js'
import type { ConductorRpc, InventoryReportResult } from '../rpc/conductor-rpc.js'
import { DeviceStatus } from '../domain/inventory.js'
import { newUuid } from '../domain/ids.js'
import type { Logger } from '../domain/logger.js'
import { formatTimestamp, type Clock } from '../domain/time.js'
import {
  checkArray,
  checkOneOf,
  checkPositiveInt,
  checkSnapshot,
  checkString,
  checkStringMap,
  checkUuid,
} from './validate.js'

export interface ConductorDeps {
  db: DatabaseHandle
  log: Logger
  clock: Clock
  /** Id generator for new rows. @default newUuid */
  uuid?: () => string
}

export interface ConductorOptions {
  /** How long the first write of a batch waits for company (`[conductor] save_interval_ms`). @default 10 */
  saveIntervalMs?: number
  /** A batch is written at once when this many writes wait (`[conductor] max_batch`). @default 64 */
  maxBatch?: number
}

/** The conductor: the RPC implementation plus its lifecycle. Serve only the RPC methods on the bus. */
export interface Conductor extends ConductorRpc {
  /** Writes what is queued, then refuses further writes with UnavailableError. */
  stop(): Promise<void>
  /** Write transactions (batches) started and writes run through them. */
  stats(): { batches: number; ops: number }
}

export function createConductor(deps: ConductorDeps, options: ConductorOptions = {}): Conductor {
  const { db, clock, uuid = newUuid } = deps
  const { saveIntervalMs = 10, maxBatch = 64 } = options
  const log = deps.log.child({ component: 'conductor' })
  const committer = createGroupCommitter(db, { intervalMs: saveIntervalMs, maxBatch })
  const now = () => formatTimestamp(clock.now())

  return {
    async reportInventory(req): Promise<InventoryReportResult> {
      checkSnapshot(req)
      const { host, hash, devices, autoActivate } = req
      const unchanged = { changed: false, added: 0, updated: 0, removed: 0 }
      // The common case, an unchanged inventory, costs one read and no write at all.
      if ((await getReportHash(db.db, host)) === hash) return unchanged
      const result = await committer.run(async (trx) => {
        // A concurrent identical report may have landed while this one waited for its batch.
        if ((await getReportHash(trx, host)) === hash) return unchanged
        const at = now()
        const counts = await syncHostInventory(trx, { host, hash, devices }, { autoActivate, now: at, uuid })
        await setReportHash(trx, host, hash, at)
        return { changed: true, ...counts }
      })
      if (result.changed) log.info({ host, hash, ...result }, 'inventory changed')
      return result
    },

    async heartbeat(req) {
      const service = {
        host: checkString(req?.host, 'host'),
        binary: checkString(req.binary, 'binary', { max: 64 }),
        version: checkString(req.version, 'version', { max: 64, allowEmpty: true }),
      }
      await committer.run((trx) => recordHeartbeat(trx, service, now()))
    },

    async createDeviceProfile(req) {
      const input = {
        uuid: req?.uuid === undefined ? uuid() : checkUuid(req.uuid, 'uuid'),
        name: checkString(req.name, 'name'),
        description:
          req.description === null
            ? null
            : checkString(req.description, 'description', { max: 65535, allowEmpty: true }),
        groups: checkArray(req.groups, 'groups', { nonEmpty: true }).map((g, i) => checkStringMap(g, `groups[${i}]`)),
      }
      const profile = await committer.run((trx) => createDeviceProfile(trx, input, now()))
      log.debug({ uuid: profile.uuid, name: profile.name }, 'device profile created')
      return profile
    },

    async deleteDeviceProfiles(req) {
      const uuids = checkArray(req?.uuids, 'uuids', { nonEmpty: true }).map((u, i) => checkUuid(u, `uuids[${i}]`))
      await committer.run((trx) => deleteDeviceProfiles(trx, uuids))
      log.debug({ uuids }, 'device profiles deleted')
    },

    async createAttribute(req) {
      const input = {
        deployableId: checkPositiveInt(req?.deployableId, 'deployableId'),
        key: checkString(req.key, 'key'),
        value: checkString(req.value, 'value', { max: 65535, allowEmpty: true }),
      }
      return committer.run((trx) => createAttribute(trx, input, { now: now(), uuid: uuid() }))
    },

    async deleteAttribute(req) {
      const id = checkUuid(req?.uuid, 'uuid')
      await committer.run((trx) => deleteAttribute(trx, id))
    },

    async setDeviceStatus(req) {
      const id = checkUuid(req?.uuid, 'uuid')
      const status = checkOneOf(req.status, Object.values(DeviceStatus), 'status')
      const device = await committer.run((trx) => setDeviceStatus(trx, id, status, now()))
      log.info({ uuid: id, status }, 'device status set')
      return device
    },

    async stop() {
      await committer.close()
      log.info(committer.stats(), 'conductor stopped')
    },

    stats: () => committer.stats(),
  }
}
