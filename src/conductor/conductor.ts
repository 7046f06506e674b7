/**
 * The conductor (seed 002): the single writer. Every write goes through one group committer, so
 * writes that arrive together share one transaction (the "save out rate" of the seed), and every
 * input is re-checked before it reaches the database.
 */
import type { DatabaseHandle } from '../db/connection.js'
import { createGroupCommitter } from '../db/group-commit.js'
import { syncHostInventory } from '../db/inventory-sync.js'
import { isUniqueViolation } from '../db/errors.js'
import { getReportHash, recordHeartbeat, setReportHash } from '../db/services.js'
import { createDeviceProfile, deleteDeviceProfiles } from '../db/device-profiles.js'
import { createAttribute, deleteAttribute } from '../db/attributes.js'
import { setDeviceStatus } from '../db/devices.js'
import type { ConductorRpc, InventoryReportResult } from '../rpc/conductor-rpc.js'
import type { AgentRpc } from '../rpc/agent-rpc.js'
import { createLifecycle } from './lifecycle.js'
import { UnavailableError } from '../domain/errors.js'
import type { PlacementClient } from '../openstack/placement.js'
import { createPlacementSync, type RootHint } from './placement-sync.js'
import type { NovaClient } from '../openstack/nova.js'
import { createArqService } from './arqs.js'
import { createRemoteAcceleratorService, type RemoteAcceleratorOptions } from './remote-accelerators.js'
import { createV1AcceleratorService } from './v1-accelerators.js'
import { createV1Placement } from './v1-placement.js'
import { createDriverAdminService, type DriverAdminServiceOptions } from './driver-admin.js'
import { reapStaleBinds } from './arq-reaper.js'
import { sweepInstanceLocks } from '../db/arq-targets.js'
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
  /**
   * The agent of a host (`createAgentClient(bus, host, …)`), for the lifecycle and for preparing
   * bound devices; without it `markDeviceReady` fails and only TEST_PCI handles bind.
   */
  agentFor?: (
    host: string,
  ) => Pick<
    AgentRpc,
    'install' | 'prepare' | 'release' | 'createMdev' | 'removeMdev' | 'programFpgaImage' | 'listDrivers' | 'setDriverEnabled' | 'updateDriverOptions' | 'discover' | 'registerRemote'
  >
  /** Nova, told when accelerator requests resolve; absent without `[nova]`. */
  nova?: NovaClient
  /** Placement to keep in step; absent in embedded mode. */
  placement?: { client: PlacementClient; createRootProvider: boolean }
}

export interface ConductorOptions {
  /** How long the first write of a batch waits for company (`[conductor] save_interval_ms`). @default 10 */
  saveIntervalMs?: number
  /** A batch is written at once when this many writes wait (`[conductor] max_batch`). @default 64 */
  maxBatch?: number
  /** `[DEFAULT] bind_timeout`: a request in BindStarted longer than this is BindFailed. @default 60000 */
  bindTimeoutMs?: number
  /** How often the stale-bind reaper runs; 0 for never. @default bindTimeoutMs / 4 */
  reapIntervalMs?: number
  /** Bounds of the driver administration's calls to agents (1.4, driver-admin.ts). */
  driverAdmin?: DriverAdminServiceOptions
  /** Which agents a remote registration may go to (1.4, remote-accelerators.ts). */
  remote?: RemoteAcceleratorOptions
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
  const placement =
    deps.placement &&
    createPlacementSync({
      db,
      placement: deps.placement.client,
      write: (fn) => committer.run(fn),
      log,
      createRootProvider: deps.placement.createRootProvider,
    })

  // A lifecycle change (ready → installing → active | error) changes what is offered: sync after it.
  const lifecycle =
    deps.agentFor &&
    createLifecycle({
      db,
      committer,
      agentFor: deps.agentFor,
      log,
      clock,
      onInventoryChanged: async (host) => void (await syncPlacement(host)),
    })

  /**
   * Brings Placement in step with `host` after a change. `complete` when nothing is left over; else the
   * host's report hash is cleared, so that its next report (unchanged or not) tries again.
   */
  const syncPlacement = async (host: string, root?: RootHint): Promise<{ complete: boolean; deleted: number }> => {
    if (!placement) return { complete: true, deleted: 0 }
    try {
      const outcome = await placement.syncHost(host, root)
      if (outcome.written + outcome.deleted > 0) log.info({ host, ...outcome }, 'placement synced')
      if (!outcome.complete) await committer.run((trx) => setReportHash(trx, host, null, now()))
      return outcome
    } catch (err) {
      log.warn({ err, host }, 'placement sync failed; the next report of the host retries it')
    }
    await committer.run((trx) => setReportHash(trx, host, null, now()))
    return { complete: false, deleted: 0 }
  }

  /**
   * Runs a report's diff; when another conductor wrote the same host's rows first (the same report
   * delivered twice, or an outbox replay), diffs again against what it wrote.
   */
  const applyOnce = async <T>(apply: () => Promise<T>): Promise<T> => {
    try {
      return await apply()
    } catch (err) {
      const raced = isUniqueViolation(err) || isUniqueViolation((err as { cause?: unknown }).cause)
      if (!raced) throw err
      log.debug({ err }, 'another conductor wrote this host meanwhile; diffing again')
      return apply()
    }
  }

  const v1Placement = deps.placement ? createV1Placement(deps.placement.client, log) : undefined
  const { finishStaleDeletes, reconcileAllocations, internals, ...arqs } = createArqService({
    db,
    committer,
    agentFor: deps.agentFor,
    nova: deps.nova,
    placement: deps.placement?.client,
    v1Placement,
    log,
    clock,
  })
  const { bindTimeoutMs = 60_000 } = options
  const reapIntervalMs = options.reapIntervalMs ?? bindTimeoutMs / 4
  const reap = async () => {
    try {
      const releaseAttachments = v1Placement && (async (uuids: string[]) => void (await Promise.all(uuids.map(v1Placement.release))))
      await reapStaleBinds({ db, committer, nova: deps.nova, log, clock, bindTimeoutMs, reconcile: reconcileAllocations, releaseAttachments })
      const finished = await finishStaleDeletes(formatTimestamp(new Date(clock.now().getTime() - bindTimeoutMs)))
      if (finished.length > 0) log.warn({ arqs: finished }, 'finished deleting accelerator requests left Deleting')
      const cutoff = formatTimestamp(new Date(clock.now().getTime() - bindTimeoutMs))
      await committer.run((trx) => sweepInstanceLocks(trx, cutoff))
    } catch (err) {
      log.warn({ err }, 'stale-bind reaper failed; next pass retries')
    }
  }
  const reaper = reapIntervalMs > 0 ? setInterval(() => void reap(), reapIntervalMs) : undefined
  reaper?.unref()

  const noAgents = () => {
    throw new UnavailableError('this conductor cannot reach agents', { code: 'NO_AGENT_RPC' })
  }
  const driverAdmin = createDriverAdminService({ db, agentFor: deps.agentFor ?? noAgents, log }, options.driverAdmin)

  const v1 = createV1AcceleratorService({ db, committer, arqs: internals, placement: v1Placement, log, clock })

  return {
    ...arqs,
    ...driverAdmin,
    ...v1,
    ...createRemoteAcceleratorService({ db, agentFor: deps.agentFor, uuid, log, clock }, options.remote),

    async reportInventory(req): Promise<InventoryReportResult> {
      checkSnapshot(req)
      const { host, hash, devices, autoActivate, resourceProvider } = req
      const unchanged = { changed: false, added: 0, updated: 0, removed: 0, pending: 0 }
      // The common case, an unchanged inventory, costs one read and no write at all.
      if ((await getReportHash(db.db, host)) === hash) return unchanged
      const snapshot = { host, hash, devices }
      /** Diffs the snapshot in; the hash is kept only when nothing is left to do (else: null, retry). */
      const apply = (keepHash: boolean, skipIfCurrent = false) =>
        committer.run(async (trx) => {
          // A concurrent identical report may have landed while this one waited for its batch.
          if (skipIfCurrent && (await getReportHash(trx, host)) === hash) return undefined
          const at = now()
          const counts = await syncHostInventory(trx, snapshot, { autoActivate, now: at, uuid })
          await setReportHash(trx, host, keepHash && counts.pending === 0 ? hash : null, at)
          return counts
        })
      let counts = await applyOnce(() => apply(!placement, true))
      if (!counts) return unchanged
      if (placement) {
        const synced = await syncPlacement(host, resourceProvider)
        // Providers deleted from Placement free their pending rows: diff again to remove them.
        if (synced.complete || synced.deleted > 0) {
          const again = (await apply(synced.complete))!
          counts = { ...counts, removed: counts.removed + again.removed, pending: again.pending }
        }
      }
      const result = { changed: true, ...counts }
      log.info({ host, hash, ...result }, 'inventory changed')
      return result
    },

    async heartbeat(req) {
      const service = {
        host: checkString(req?.host, 'host'),
        binary: checkString(req.binary, 'binary', { max: 64 }),
        version: checkString(req.version, 'version', { max: 64, allowEmpty: true }),
      }
      if (req.inventoryHash === undefined) {
        await committer.run((trx) => recordHeartbeat(trx, service, now()))
        return undefined
      }
      const hash = checkString(req.inventoryHash, 'inventoryHash', { max: 64 })
      const inventoryCurrent = await committer.run((trx) => recordHeartbeat(trx, service, now(), hash))
      return { inventoryCurrent }
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
      await syncPlacement(device.hostname)
      return device
    },

    async markDeviceReady(req) {
      if (!lifecycle) throw new UnavailableError('this conductor cannot reach agents', { code: 'NO_AGENT_RPC' })
      return lifecycle.markDeviceReady(req?.uuid)
    },

    async stop() {
      clearInterval(reaper)
      await committer.close()
      log.info(committer.stats(), 'conductor stopped')
    },

    stats: () => committer.stats(),
  }
}
