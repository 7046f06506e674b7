/**
 * What the conductor (conductor.ts) is built from and what it offers: its dependencies, its
 * options, and its handle.
 */
import type { DatabaseHandle } from '../db/core/connection.js'
import type { ConductorRpc } from '../rpc/conductor-rpc.js'
import type { AgentRpc } from '../rpc/agent-rpc.js'
import type { PlacementClient } from '../openstack/placement.js'
import type { NovaClient } from '../openstack/nova.js'
import type { RemoteAcceleratorOptions } from './remote-accelerators.js'
import type { DriverAdminServiceOptions } from './driver-admin.js'
import type { HeartbeatBatchOptions } from './heartbeat-batch.js'
import type { Metrics } from '../domain/metrics.js'
import type { EventRelayOptions } from './outbox/event-relay.js'
import type { CustodySealerOptions } from './outbox/custody-sealer.js'
import type { LimitSource } from '../domain/quota.js'
import type { EventSink } from './outbox/event-sinks.js'
import type { WebhookDispatcherOptions } from './outbox/webhook-dispatcher.js'
import type { Logger } from '../domain/logger.js'
import type { Clock } from '../domain/time.js'
import type { UnitCleaningOptions } from './cleaning/cleaning.js'
import type { CleaningStats } from './cleaning/cleaning-stats.js'
import type { CleanAgent } from './cleaning/clean-asks.js'
import type { ReconfigSweepOptions } from './reconfig/reconfig-sweep.js'

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
    | 'install'
    | 'abortClean'
    | 'prepare'
    | 'release'
    | 'createMdev'
    | 'removeMdev'
    | 'programFpgaImage'
    | 'listDrivers'
    | 'setDriverEnabled'
    | 'updateDriverOptions'
    | 'discover'
    | 'registerRemote'
    | 'cleanUnit'
    | 'configureDevice'
  >
  /**
   * The host's agent for cleans (docs/cleaning.md), with a time limit long enough for one (an
   * NVMe sanitize takes up to an hour). @default agentFor
   */
  cleanAgentFor?: ((host: string) => CleanAgent) | undefined
  /**
   * The host's agent for a force-in-service's `abortClean` (issue 27), with a time limit under
   * the API's own call to the conductor, so that the operator reads which host did not answer.
   * @default agentFor
   */
  abortAgentFor?: ((host: string) => Pick<AgentRpc, 'abortClean'>) | undefined
  /**
   * The host's agent for programs and configures (docs/fpga.md), with the time limit of one
   * (`[conductor] reconfigure_timeout`: flashing a card takes minutes). @default agentFor
   */
  reconfigAgentFor?:
    ((host: string) => Pick<AgentRpc, 'programFpgaImage' | 'configureDevice'>) | undefined
  /** Nova, told when accelerator requests resolve; absent without `[nova]`. */
  nova?: NovaClient
  /** Placement to keep in step; absent in embedded mode. */
  placement?: { client: PlacementClient; createRootProvider: boolean }
  /** Where the conductor's counters and fleet gauges go (docs/metrics.md). @default none */
  metrics?: Metrics
  /**
   * Where the event relay delivers the outbox (event-relay.ts), each in turn. @default none: events
   * are still written with every change, and stamped sent at once.
   */
  eventSinks?: EventSink[]
  /** `[quota] driver = unified_limits`: Keystone limits for standalone binds and v1 attaches. */
  quota?: LimitSource
}

export interface ConductorOptions {
  /** `[metrics] fleet_refresh_seconds` in ms: how often the fleet gauges are counted. @default 30000 */
  fleetRefreshMs?: number
  /** How long the first write of a batch waits for company (`[conductor] save_interval_ms`). @default 10 */
  saveIntervalMs?: number
  /** A batch is written at once when this many writes wait (`[conductor] max_batch`). @default 64 */
  maxBatch?: number
  /** `[DEFAULT] bind_timeout`: a request in BindStarted longer than this is BindFailed. @default 60000 */
  bindTimeoutMs?: number
  /** How often the stale-bind reaper runs; 0 for never. @default bindTimeoutMs / 4 */
  reapIntervalMs?: number
  /**
   * `[DEFAULT] service_down_time` in ms: the agents' lease (lease-sweep.ts). Binds refuse a host
   * whose agent is past it, and a periodic sweep fences its devices. @default no leases
   */
  serviceDownTimeMs?: number
  /** How often the lease sweep runs (`[agent] report_interval`). @default 10000 */
  leaseSweepIntervalMs?: number
  /**
   * Heartbeat coalescing (heartbeat-batch.ts): under load, heartbeats wait up to `windowMs` for
   * company and share one statement; `false` writes each alone through the group committer.
   * @default { windowMs: 20, maxBatch: 32 }
   */
  heartbeats?: HeartbeatBatchOptions | false
  /**
   * `[conductor] health_recovery_reports`: healthy reports in a row before a device fenced by its
   * own health is offered again (damping, src/domain/health/report.ts). @default 1 (no damping)
   */
  healthRecoveryReports?: number
  /** Bounds of the driver administration's calls to agents (1.4, driver-admin.ts). */
  driverAdmin?: DriverAdminServiceOptions
  /** Which agents a remote registration may go to (1.4, remote-accelerators.ts). */
  remote?: RemoteAcceleratorOptions
  /** The event relay: batch size, polling, retention (`[events] retention_hours`), retries. */
  events?: EventRelayOptions
  /** The custody ledger's sealer and pruning (`[custody]`, docs/custody.md). */
  custody?: CustodySealerOptions
  /**
   * Clean before reuse (docs/cleaning.md): the retry interval and sweep. Cleaning needs agents
   * (`cleanAgentFor` or `agentFor`); without them, or with `false` (benchmarks comparing the
   * release path without it; not an operator setting: operators choose `[<driver>] clean = none`),
   * released units go straight back in service.
   */
  cleaning?: UnitCleaningOptions | false
  /** Programs and configures: when the sweep takes over a fence left by one (docs/fpga.md). */
  reconfig?: ReconfigSweepOptions
  /**
   * `[webhooks]` (docs/webhooks.md): the webhook sink is among the event sinks and the dispatcher
   * runs, whether or not any endpoint is registered; `false` for neither. @default {}
   */
  webhooks?: WebhookDispatcherOptions | false
}

/** The conductor: the RPC implementation plus its lifecycle. Serve only the RPC methods on the bus. */
export interface Conductor extends ConductorRpc {
  /** Writes what is queued, then refuses further writes with UnavailableError. */
  stop(): Promise<void>
  /** Write transactions (batches) started and writes run through them. */
  /** Group-commit batches and writes; with agents, what cleaning did (asks, settle writes). */
  stats(): { batches: number; ops: number; cleaning?: CleaningStats }
  /** Delivers the events written so far to the sinks (tests, shutdown); resolves with how many. */
  drainEvents(): Promise<number>
  /** One sweep of reconfiguration fences left behind (reconfig-sweep.ts); how many were lifted. */
  sweepReconfig(): Promise<number>
  /** Seals the custody records appended so far (tests); resolves with how many. */
  drainCustody(): Promise<number>
  /** Resolves once every clean this conductor started has settled (tests). */
  cleaningIdle(): Promise<void>
  /** One cleaning sweep now: asks again for units whose last ask is stale; resolves with how many. */
  sweepCleaning(): Promise<number>
  /** Prunes custody records past `[custody] retain_days` now; resolves with how many. */
  pruneCustody(): Promise<number>
  /**
   * Applies reloaded options (SIGHUP, src/main/reload.ts): `[webhooks]` to the dispatcher and
   * `[metrics] fleet_refresh_seconds` to the fleet gauges' timer. Others need a restart.
   */
  reconfigure(options: Pick<ConductorOptions, 'webhooks' | 'fleetRefreshMs'>): void
}
