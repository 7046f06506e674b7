/**
 * The core of every process: a conductor served on the bus and/or an agent with its drivers.
 * `cyborg up` (all-in-one), `cyborg conductor`, `cyborg agent` and the API tests build on it;
 * config → options happens in the caller.
 */
import { hostname as osHostname } from 'node:os'
import type { LimitSource } from '../domain/quota.js'
import type { EventSink } from '../conductor/outbox/event-sinks.js'
import type { Metrics } from '../domain/metrics.js'
import type { MessageBus, Subscription } from '../bus/bus.js'
import type { DatabaseHandle } from '../db/core/connection.js'
import type { Conductor, ConductorOptions } from '../conductor/conductor.js'
import { createAgent, type Agent, type AgentCache } from '../agent/agent.js'
import type { ImageSource } from '../agent/fpga-images.js'
import { createFileAgentCache } from '../agent/local-cache.js'
import { createDrivers, DRIVER_REGISTRY } from '../drivers/index.js'
import { runClean } from '../drivers/clean.js'
import { createNodeHostProbe } from '../drivers/host-probe/node-host-probe.js'
import { createCachingHostProbe } from '../drivers/host-probe/caching-host-probe.js'
import type { HostProbe } from '../drivers/driver.js'
import { createConductorClient, serveConductor, type ConductorRpc } from '../rpc/conductor-rpc.js'
import { createAgentClient } from '../rpc/agent-rpc.js'
import type { Logger } from '../domain/logger.js'
import type { PlacementClient } from '../openstack/placement.js'
import type { NovaClient } from '../openstack/nova.js'
import { findRootProvider } from '../openstack/root-provider.js'
import { fullyQualifiedName } from './fqdn.js'
import { systemClock, type Clock } from '../domain/time.js'

export interface CoreAgentOptions {
  /** This host's name. @default os.hostname() */
  host?: string
  /** @default 60000 */
  periodicIntervalMs?: number
  /** `[agent] report_interval` in ms: heartbeats between discoveries. @default only with discovery */
  reportIntervalMs?: number
  /** @default false */
  autoActivate?: boolean
  /** Driver names (`[agent] enabled_drivers`). @default ['fake'] */
  enabledDrivers?: string[]
  /** Per-driver options, by driver name. @default {} */
  driverOptions?: Record<string, Record<string, string>>
  /** Where the host's file system is seen (`[agent] host_root`). @default '/' */
  hostRoot?: string
  /** Where FPGA bitstreams come from (`[glance]`). */
  images?: ImageSource
  /** The host the drivers look at. @default the real host (createNodeHostProbe under hostRoot) */
  hostProbe?: HostProbe
  /** @default a file cache in `stateDir` when given, else a cache that keeps nothing */
  cache?: AgentCache
  /** The agent's state directory (`<state_path>/agent-<host>/`): its file cache lives there. */
  stateDir?: string
  /**
   * Names the compute node may have in Placement, tried in order when Placement is configured
   * (`[agent] resource_provider_name`, then `[DEFAULT] host`). @default [the host's FQDN, host]
   */
  resourceProviderNames?: string[]
}

/** Placement, when configured (`[placement]`). */
export interface CorePlacement {
  client: PlacementClient
  createRootProvider: boolean
}

export interface CoreOptions {
  /** Needed when the conductor runs here. */
  db?: DatabaseHandle
  bus: MessageBus
  log: Logger
  /** @default systemClock */
  clock?: Clock
  /** Run a conductor here, with these options; `false` for none. @default {} (run one with defaults) */
  conductor?: ConductorOptions | false
  /** Run an agent here, with these options; `false` (the default) for none. */
  agent?: CoreAgentOptions | false
  /** Timeout of calls through `conductorClient` (and the agent's calls). @default 30000 */
  rpcTimeoutMs?: number
  /** Version reported in heartbeats. @default '0.1.0' */
  version?: string
  /** Placement to keep in step (conductor) and to find the compute node in (agent). */
  placement?: CorePlacement
  /** Nova, told by the conductor when accelerator requests resolve. */
  nova?: NovaClient
  /** Where the conductor's and agent's metrics go (docs/metrics.md). @default none recorded */
  metrics?: Metrics
  /** Where the conductor's events go besides webhooks (oslo notifications; src/main/notifications.ts). */
  eventSinks?: EventSink[]
  /** Keystone unified limits for the conductor's standalone binds and v1 attaches (docs/quota.md). */
  quota?: LimitSource
}

export interface Core {
  /** A client of the conductor over the bus (whichever process serves it). */
  conductorClient: ConductorRpc
  /** The local conductor, when one runs here (for stats; call it only through the bus otherwise). */
  conductor: Conductor | undefined
  /** The local agent, when one runs here. */
  agent: Agent | undefined
  /** Stops the agent, then the conductor (flushing its writes). Leaves the bus and the database open. */
  stop(): Promise<void>
}

/** Starts what `options` asks for; a failure while starting stops what had started. */
export async function startCore(options: CoreOptions): Promise<Core> {
  const { db, bus, log, clock = systemClock, rpcTimeoutMs = 30_000, version = '0.1.0' } = options
  const conductorOptions = options.conductor ?? {}
  const agentOptions = options.agent ?? false
  const conductorClient = createConductorClient(bus, { timeoutMs: rpcTimeoutMs })
  let conductor: Conductor | undefined
  let server: Subscription | undefined
  let agent: Agent | undefined
  let deviceGauges: { stop(): Promise<void> } | undefined

  const cleanAsks = new AbortController()
  const stop = async () => {
    cleanAsks.abort(new Error('stopping'))
    await agent?.stop()
    await deviceGauges?.stop()
    await server?.unsubscribe()
    await conductor?.stop()
  }

  try {
    if (conductorOptions !== false) {
      if (!db) throw new TypeError('startCore: a conductor needs options.db')
      const agentFor = (host: string) => createAgentClient(bus, host, { timeoutMs: rpcTimeoutMs })
      // An ask waits two retry intervals, then expires (also from the agent's queue): a clean that
      // takes longer (a sanitize) is joined by the next ask, or answered from the agent's memory
      // once done. Asks are given up when this core stops (the unit stays cleaning).
      const cleanTimeoutMs =
        2 * ((conductorOptions.cleaning || undefined)?.retryIntervalMs ?? 60_000)
      const cleanAgentFor = (host: string) =>
        createAgentClient(bus, host, { timeoutMs: cleanTimeoutMs, signal: cleanAsks.signal })
      // A force-in-service's abort answers within half the API's call to the conductor: the
      // operator gets the conductor's answer (which host is silent), not the API's own time-out.
      const abortAgentFor = (host: string) =>
        createAgentClient(bus, host, { timeoutMs: Math.floor(rpcTimeoutMs / 2) })
      const reconfigTimeoutMs = conductorOptions.reconfig?.timeoutMs ?? 2_400_000
      const reconfigAgentFor = (host: string) =>
        createAgentClient(bus, host, { timeoutMs: reconfigTimeoutMs, signal: cleanAsks.signal })
      // Loaded only where a conductor runs: an agent process never loads the database modules.
      const { createConductor } = await import('../conductor/conductor.js')
      conductor = createConductor(
        {
          db,
          log,
          clock,
          placement: options.placement,
          nova: options.nova,
          agentFor,
          cleanAgentFor,
          abortAgentFor,
          reconfigAgentFor,
          metrics: options.metrics,
          eventSinks: options.eventSinks,
          quota: options.quota,
        },
        conductorOptions,
      )
      server = await serveConductor(bus, conductor, options.metrics)
      // Device telemetry gauges (issue 16): the agents' samples on `cyborg.telemetry`, in memory.
      if (options.metrics) {
        const { startDeviceGauges } = await import('../conductor/device-telemetry.js')
        deviceGauges = await startDeviceGauges({ bus, db: db.db, metrics: options.metrics, log })
      }
    }
    if (agentOptions !== false) {
      const {
        host = osHostname(),
        enabledDrivers = ['fake'],
        driverOptions = {},
        stateDir,
      } = agentOptions
      const { placement } = options
      // With Placement, the compute node must exist before any device provider can hang under it.
      const resourceProvider =
        placement &&
        (await findRootProvider({
          placement: placement.client,
          names: agentOptions.resourceProviderNames ?? [await fullyQualifiedName(host), host],
          create: placement.createRootProvider,
          log,
        }))
      // Drivers share one probe that reads each file once per discovery (several walk the same PCI tree).
      const hostProbe = createCachingHostProbe(
        agentOptions.hostProbe ?? createNodeHostProbe({ root: agentOptions.hostRoot }),
      )
      const drivers = createDrivers(
        enabledDrivers,
        { host: hostProbe, hostname: host },
        driverOptions,
      )
      const cache =
        agentOptions.cache ??
        (stateDir === undefined ? undefined : createFileAgentCache(stateDir, { log, clock }))
      agent = createAgent(
        {
          conductor: conductorClient,
          drivers,
          driverOptions,
          driverRegistry: DRIVER_REGISTRY,
          runClean,
          log,
          clock,
          bus,
          cache,
          hostProbe,
          beforeDiscovery: hostProbe.reset,
          images: agentOptions.images,
          metrics: options.metrics,
        },
        {
          host,
          version,
          periodicIntervalMs: agentOptions.periodicIntervalMs,
          reportIntervalMs: agentOptions.reportIntervalMs,
          autoActivate: agentOptions.autoActivate,
          resourceProvider,
        },
      )
      await agent.start()
    }
  } catch (err) {
    await stop()
    throw err
  }
  return { conductorClient, conductor, agent, stop }
}
