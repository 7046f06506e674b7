/**
 * The agent's crash-proof local cache (seed 000: "not losing accelerator state on system
 * interruption or loss of connection"), in its state directory (`<state_path>/agent-<host>/`):
 *
 * - `snapshot.json`: the last snapshot sent, and the last one the conductor acknowledged;
 * - `drivers.json`:  each driver's last discovery outcome;
 * - `outbox.json`:   reports saved but not yet acknowledged, oldest first;
 * - `driver-settings.json`: runtime driver settings (enabled, option overrides; AgentRpc 1.2);
 * - `remote-accelerators.json`: the remote accelerators registered here (AgentRpc 1.4 `registerRemote`).
 *
 * Each file is a header line `cyborg-agent-cache 1 sha256=<hex of the body>` and a JSON body.
 * Every write is atomic: a temp file in the same directory, fsync, rename over the old file,
 * fsync of the directory. A file that does not parse or whose checksum does not match is moved
 * aside (`<name>.corrupt-<time>`) with a warning and treated as missing; leftover temp files of a
 * crash are deleted when the cache opens. This is the only file of src/agent that uses node:fs:
 * the agent's own state, not the host's devices (those go through the HostProbe).
 */
import * as nodeFs from 'node:fs/promises'
import type { InventorySnapshot } from '../domain/inventory/inventory.js'
import type { Logger } from '../domain/logger.js'
import { systemClock, type Clock } from '../domain/time.js'
import type { InventoryReportResult } from '../rpc/conductor-rpc.js'
import type { AgentCache, DriverState } from './agent.js'
import type { DriverSettings } from './driver-admin.js'
import { isRemoteAccelerator, type RemoteAccelerator } from '../drivers/driver.js'
import {
  openCacheDir,
  readChecked as readFile,
  writeAtomic as writeFile,
  type CacheDir,
  type CacheFs,
} from './cache-file.js'

export { decodeCacheFile, encodeCacheFile, type CacheFs } from './cache-file.js'

export interface FileAgentCacheDeps {
  log: Logger
  /** @default systemClock */
  clock?: Clock
  /** @default node:fs/promises */
  fs?: Partial<CacheFs>
}

/** One unacknowledged report. */
export interface OutboxEntry {
  hash: string
  /** ISO time it was saved. */
  savedAt: string
  snapshot: InventorySnapshot
}

interface SnapshotFile {
  savedAt: string
  snapshot: InventorySnapshot
  acknowledged: { hash: string; at: string; result: InventoryReportResult } | null
}

interface DriversFile {
  savedAt: string
  drivers: DriverState[]
}

interface OutboxFile {
  entries: OutboxEntry[]
}

interface DriverSettingsFile {
  savedAt: string
  drivers: DriverSettings
}

interface RemoteAcceleratorsFile {
  savedAt: string
  accelerators: RemoteAccelerator[]
}

export const CACHE_FILES = {
  snapshot: 'snapshot.json',
  drivers: 'drivers.json',
  outbox: 'outbox.json',
  driverSettings: 'driver-settings.json',
  remoteAccelerators: 'remote-accelerators.json',
} as const

/** A file agent cache, with read access for `cyborg agent` diagnostics and tests. */
export interface FileAgentCache extends Required<AgentCache> {
  readonly dir: string
  /** The last snapshot saved, if any. */
  lastSnapshot(): Promise<InventorySnapshot | undefined>
  /** The hash the conductor last acknowledged, if any. */
  lastAcknowledgedHash(): Promise<string | undefined>
  /** Each driver's last discovery outcome. */
  driverStates(): Promise<DriverState[]>
}

/**
 * Creates the cache over `dir` (created, mode 0750, on first use). Operations run one at a time.
 * Opening never fails on a bad file: it is moved aside with a warning.
 */
export function createFileAgentCache(dir: string, deps: FileAgentCacheDeps): FileAgentCache {
  const fs: CacheFs = { ...nodeFs, ...deps.fs }
  const clock = deps.clock ?? systemClock
  const log = deps.log.child({ component: 'agent-cache', dir })
  let state:
    | Promise<{
        snapshot?: SnapshotFile
        drivers?: DriversFile
        outbox: OutboxEntry[]
        settings?: DriverSettingsFile
        remote?: RemoteAcceleratorsFile
      }>
    | undefined
  let queue: Promise<unknown> = Promise.resolve()

  const now = () => clock.now().toISOString()

  const serialized = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = queue.then(fn)
    queue = run.catch(() => {})
    return run
  }

  const cacheDir: CacheDir = { fs, dir, log, now }
  const writeAtomic = (name: string, body: unknown) => writeFile(cacheDir, name, body)
  const readChecked = <T>(name: string, valid: (body: unknown) => body is T) =>
    readFile(cacheDir, name, valid)

  const load = () =>
    (state ??= (async () => {
      await openCacheDir(cacheDir)
      const snapshot = await readChecked(CACHE_FILES.snapshot, isSnapshotFile)
      const drivers = await readChecked(CACHE_FILES.drivers, isDriversFile)
      const outbox = (await readChecked(CACHE_FILES.outbox, isOutboxFile))?.entries ?? []
      const settings = await readChecked(CACHE_FILES.driverSettings, isDriverSettingsFile)
      const remote = await readChecked(CACHE_FILES.remoteAccelerators, isRemoteAcceleratorsFile)
      return { snapshot, drivers, outbox, settings, remote }
    })().catch((err: unknown) => {
      state = undefined
      throw err
    }))

  return {
    dir,
    saveSnapshot: (snapshot) =>
      serialized(async () => {
        const s = await load()
        const savedAt = now()
        if (s.snapshot?.snapshot.hash !== snapshot.hash) {
          s.snapshot = { savedAt, snapshot, acknowledged: s.snapshot?.acknowledged ?? null }
          await writeAtomic(CACHE_FILES.snapshot, s.snapshot)
        }
        // The conductor already holds this hash: nothing to lose if the report never arrives.
        if (s.snapshot?.acknowledged?.hash === snapshot.hash && s.outbox.length === 0) return
        // Reports are full snapshots: a newer one supersedes whatever is still pending.
        s.outbox = [{ hash: snapshot.hash, savedAt, snapshot }]
        await writeAtomic(CACHE_FILES.outbox, { entries: s.outbox } satisfies OutboxFile)
      }),
    acknowledge: (snapshot, result) =>
      serialized(async () => {
        const s = await load()
        const at = s.outbox.findIndex((e) => e.hash === snapshot.hash)
        if (at >= 0) {
          // This one and everything older is now superseded on the conductor.
          s.outbox = s.outbox.slice(at + 1)
          await writeAtomic(CACHE_FILES.outbox, { entries: s.outbox } satisfies OutboxFile)
        }
        if (s.snapshot?.acknowledged?.hash === snapshot.hash) return
        s.snapshot = {
          savedAt: s.snapshot?.savedAt ?? now(),
          snapshot: s.snapshot?.snapshot ?? snapshot,
          acknowledged: { hash: snapshot.hash, at: now(), result },
        }
        await writeAtomic(CACHE_FILES.snapshot, s.snapshot)
      }),
    pending: () => serialized(async () => (await load()).outbox.map((e) => e.snapshot)),
    saveDriverStates: (drivers) =>
      serialized(async () => {
        const s = await load()
        s.drivers = { savedAt: now(), drivers: [...drivers] }
        await writeAtomic(CACHE_FILES.drivers, s.drivers)
      }),
    driverSettings: () => serialized(async () => (await load()).settings?.drivers),
    saveDriverSettings: (drivers) =>
      serialized(async () => {
        const s = await load()
        const file: DriverSettingsFile = { savedAt: now(), drivers: structuredClone(drivers) }
        await writeAtomic(CACHE_FILES.driverSettings, file)
        s.settings = file
      }),
    remoteAccelerators: () =>
      serialized(async () => (await load()).remote?.accelerators.map((a) => ({ ...a }))),
    saveRemoteAccelerators: (accelerators) =>
      serialized(async () => {
        const s = await load()
        const file: RemoteAcceleratorsFile = {
          savedAt: now(),
          accelerators: accelerators.map(({ name, uuid }) => ({ name, uuid })),
        }
        await writeAtomic(CACHE_FILES.remoteAccelerators, file)
        s.remote = file
      }),
    lastSnapshot: () => serialized(async () => (await load()).snapshot?.snapshot),
    lastAcknowledgedHash: () => serialized(async () => (await load()).snapshot?.acknowledged?.hash),
    driverStates: () => serialized(async () => (await load()).drivers?.drivers ?? []),
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v)
const isSnapshot = (v: unknown): v is InventorySnapshot =>
  isObject(v) &&
  typeof v.host === 'string' &&
  typeof v.hash === 'string' &&
  Array.isArray(v.devices)
const isSnapshotFile = (v: unknown): v is SnapshotFile =>
  isObject(v) &&
  typeof v.savedAt === 'string' &&
  isSnapshot(v.snapshot) &&
  (v.acknowledged === null || isObject(v.acknowledged))
const isDriversFile = (v: unknown): v is DriversFile => isObject(v) && Array.isArray(v.drivers)
const isStringMap = (v: unknown): v is Record<string, string> =>
  isObject(v) && Object.values(v).every((x) => typeof x === 'string')
const isDriverSettingsFile = (v: unknown): v is DriverSettingsFile =>
  isObject(v) &&
  typeof v.savedAt === 'string' &&
  isObject(v.drivers) &&
  Object.values(v.drivers).every(
    (d) => isObject(d) && typeof d.enabled === 'boolean' && isStringMap(d.options),
  )
const isRemoteAcceleratorsFile = (v: unknown): v is RemoteAcceleratorsFile =>
  isObject(v) &&
  typeof v.savedAt === 'string' &&
  Array.isArray(v.accelerators) &&
  v.accelerators.every(isRemoteAccelerator)
const isOutboxFile = (v: unknown): v is OutboxFile =>
  isObject(v) &&
  Array.isArray(v.entries) &&
  v.entries.every((e) => isObject(e) && typeof e.hash === 'string' && isSnapshot(e.snapshot))
