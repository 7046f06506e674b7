/** What the agent (agent.ts) is built from and what it offers: its dependencies, options, cache port and handle. */
import type { Metrics } from '../domain/metrics.js'
import type { MessageBus } from '../bus/bus.js'
import type {
  AcceleratorDriver,
  CleanRunner,
  DriverRegistry,
  HostProbe,
  RemoteAccelerator,
} from '../drivers/driver.js'
import type { ConductorRpc, InventoryReportResult } from '../rpc/conductor-rpc.js'
import type { InventorySnapshot } from '../domain/inventory/inventory.js'
import type { Logger } from '../domain/logger.js'
import type { Clock } from '../domain/time.js'
import type { DriverRun } from './snapshot.js'
import type { DriverSettings } from './driver-admin.js'
import type { ImageSource } from './fpga-images.js'

/** One driver's last discovery outcome, as the cache keeps it. */
export interface DriverState extends DriverRun {
  /** ISO time of the discovery. */
  at: string
  /** Why it failed, when it did. */
  error?: { code: string; message: string }
}

/**
 * Where the agent keeps what it sends (the crash-proof local cache of seed 000,
 * `createFileAgentCache`, plugs in here). The default keeps nothing. A cache that fails is logged
 * and never stops a report: it is a safety net.
 */
export interface AgentCache {
  /** Called with every snapshot before it is sent: it joins the outbox. */
  saveSnapshot(snapshot: InventorySnapshot): Promise<void>
  /** Called once the conductor has accepted `snapshot`: it (and anything older) leaves the outbox. */
  acknowledge(snapshot: InventorySnapshot, result: InventoryReportResult): Promise<void>
  /** The outbox, oldest first: `start()` replays it before the first discovery. */
  pending?(): Promise<InventorySnapshot[]>
  /** Called after every discovery with each driver's outcome. */
  saveDriverStates?(states: readonly DriverState[]): Promise<void>
  /** The runtime driver settings (enabled, option overrides) last saved; read once, before the first discovery. */
  driverSettings?(): Promise<DriverSettings | undefined>
  /** Saves the runtime driver settings; a failure fails the RPC that changed them. */
  saveDriverSettings?(settings: DriverSettings): Promise<void>
  /** (remote driver) The remote accelerators registered here, as last saved; read once. */
  remoteAccelerators?(): Promise<RemoteAccelerator[] | undefined>
  /** Saves the remote registrations; a failure fails the `registerRemote` that changed them. */
  saveRemoteAccelerators?(accelerators: readonly RemoteAccelerator[]): Promise<void>
}

export interface AgentDeps {
  conductor: ConductorRpc
  /** Discovery times and report outcomes (docs/metrics.md). @default none recorded */
  metrics?: Metrics
  drivers: readonly AcceleratorDriver[]
  log: Logger
  clock: Clock
  /** When given, `start()` serves the agent RPC (`discover`) on `cyborg.agent.<host>`. */
  bus?: MessageBus
  /** @default a cache that keeps nothing */
  cache?: AgentCache
  /** The host the device operations (prepare, release, mdevs) write to; without it they fail. */
  hostProbe?: HostProbe
  /** Where FPGA bitstreams come from (`[glance]`); without it `programFpgaImage` is unavailable. */
  images?: ImageSource
  /** Called before each discovery (core: forget the caching probe's reads, so each run sees the host anew). */
  beforeDiscovery?: () => void
  /** The options `drivers` were built with, by driver name (`updateDriverOptions` merges over them). @default {} */
  driverOptions?: Readonly<Record<string, Readonly<Record<string, string>>>>
  /**
   * The driver factories (to rebuild a driver with new options) and aliases (accepted by the driver
   * RPCs, listed by `listDrivers`), by name: the composition root passes src/drivers/index.ts's.
   */
  driverRegistry: DriverRegistry
  /** clean.ts's `runClean`, for `cleanUnit` (docs/cleaning.md). @default none: cleans are refused */
  runClean?: CleanRunner
}

export interface AgentOptions {
  /** This host's name, as reported to the conductor. */
  host: string
  /** Time between discovery runs (and heartbeats). @default 60000 */
  periodicIntervalMs?: number
  /** `[agent] report_interval`: heartbeats between discovery runs too (the lease). @default only with discovery */
  reportIntervalMs?: number
  /** New devices become `active` at once instead of `inactive`. @default false */
  autoActivate?: boolean
  /** Version sent with heartbeats. @default '0.1.0' */
  version?: string
  /** A driver whose discovery takes longer fails for that run. @default 60000 */
  discoverTimeoutMs?: number
  /** Time limit of a driver's `stats()` for telemetry. @default 5000 */
  statsTimeoutMs?: number
  /** How long `stop()` waits for a running discovery and report before it gives up on them. @default 5000 */
  stopGraceMs?: number
  /** The compute node provider in Placement that this host's devices hang under, when resolved. */
  resourceProvider?: { name: string; uuid: string } | undefined
}

export type AgentState = 'idle' | 'running' | 'stopping' | 'stopped'

export interface Agent {
  readonly state: AgentState
  /** Serves the agent RPC, then discovers at once and every period. Resolves without waiting for the first run. */
  start(): Promise<void>
  /** Stops the timer and the RPC server, aborts a running discovery and waits for the run to end. */
  stop(): Promise<void>
  /**
   * Discovers and reports now (after any run in progress).
   * @throws DriverError (code DISCOVERY_FAILED, `details.failures`) when a driver failed; nothing is reported then.
   */
  discoverNow(): Promise<InventoryReportResult>
}
