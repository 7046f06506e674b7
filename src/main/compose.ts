/**
 * The composition roots of the long-running commands: `cyborg up` (all-in-one) and the separate
 * `cyborg api`, `cyborg conductor` and `cyborg agent` processes. Each builds its adapters from
 * the Config, starts in dependency order and returns a `stop()` that shuts down in reverse:
 * stop accepting requests, stop the agent, flush the conductor, close the bus, close the database.
 */
import { join } from 'node:path'
import type { Logger } from 'pino'
import type { Config } from '../config/config.js'
import type { DatabaseHandle } from '../db/core/connection.js'
import type { MessageBus } from '../bus/bus.js'
import type { Conductor } from '../conductor/conductor.js'
import { createConductorClient, type ConductorRpc } from '../rpc/conductor-rpc.js'
import { startCore } from './core.js'
import {
  agentOptions,
  busKind,
  conductorOptions,
  createConfiguredBus,
  ensureStateDir,
  liveConductorOptions,
  novaOptions,
  placementOptions,
  quotaLimits,
  rpcTimeoutMs,
} from './resources.js'
import { VERSION } from './version.js'
import { startIdleGc } from './idle-gc.js'
import { API_BINARY, CONDUCTOR_BINARY, startHeartbeat } from './heartbeat.js'
import { loadApiTls } from './tls.js'
import { createPrometheusMetrics, type PrometheusMetrics } from './metrics/prometheus.js'
import { createMetricsListener } from './metrics/metrics-server.js'
import { eventSinks } from './notifications.js'
import { createReloader, reloadOnSighup, type Reloader } from './reload.js'
import { reconfigureLogger } from './logger.js'

export interface RunningService {
  /** Shuts down in order; resolves false when a step failed (it was logged). */
  stop(): Promise<boolean>
}

/** How long `cyborg up` waits for the first discovery before opening the API anyway. */
const FIRST_DISCOVERY_WAIT_MS = 5000

/** Things to undo, most recent first. A failed start undoes what it had done. */
class Teardown {
  readonly #steps: { name: string; run: () => Promise<unknown> }[] = []
  constructor(readonly log: Logger) {}

  add(name: string, run: () => Promise<unknown>): void {
    this.#steps.unshift({ name, run })
  }

  async run(): Promise<boolean> {
    let ok = true
    for (const { name, run } of this.#steps.splice(0)) {
      try {
        await run()
        this.log.debug({ step: name }, 'stopped')
      } catch (err) {
        ok = false
        this.log.error({ err, step: name }, `shutdown step failed: ${name}`)
      }
    }
    return ok
  }

  /** Runs `start`; if it throws, tears down what is registered so far and rethrows. */
  async guard<T>(start: () => Promise<T>): Promise<T> {
    try {
      return await start()
    } catch (err) {
      await this.run()
      throw err
    }
  }
}

export interface StartOptions {
  /** Aborts a start that is still waiting for the message broker (a signal arrived). */
  signal?: AbortSignal
}

interface Resources {
  bus: MessageBus
  down: Teardown
  /** This process's metrics; served on `[metrics] listen` when set, and by the API's /metrics. */
  metrics: PrometheusMetrics
  /** Present when the service asked for the database. */
  db: DatabaseHandle | undefined
  /** SIGHUP's reload: parts that apply reloaded options register a step (reload.ts). */
  reload: Reloader
}

/**
 * The common start of every service: reload on SIGHUP (from the start, so that a signal during a
 * long wait for the broker does not kill the process), connect the bus, create the state dir, open
 * the database when asked, registering each for teardown; then `body`. A failed start undoes what
 * was done.
 */
async function withResources<T>(
  config: Config,
  log: Logger,
  options: StartOptions,
  what: { service: string; shared: boolean; database: boolean },
  body: (r: Resources) => Promise<T>,
): Promise<T> {
  const reload = createReloader(config, { log })
  reload.add({ name: 'logging', apply: (next) => reconfigureLogger(log, next, process.env) })
  const stopReloading = reloadOnSighup(reload, log)
  const metrics = createPrometheusMetrics()
  let bus: MessageBus
  try {
    bus = await createConfiguredBus(config, {
      shared: what.shared,
      log,
      service: what.service,
      metrics,
      ...options,
    })
  } catch (err) {
    stopReloading()
    throw err
  }
  const down = new Teardown(log)
  return down.guard(async () => {
    down.add('reload on SIGHUP', async () => stopReloading())
    down.add('bus', () => bus.close())
    const listener = await createMetricsListener(config, metrics, log)
    down.add('metrics listener', () => listener.close())
    reload.add({ name: 'metrics listener', apply: (next) => listener.apply(next) })
    ensureStateDir(config)
    let db: DatabaseHandle | undefined
    if (what.database) {
      // Loaded here, so that a process without a database (the agent) never loads the drivers.
      const { openConfiguredDatabase } = await import('./database.js')
      const opened = await openConfiguredDatabase(config)
      down.add('database', () => opened.close())
      db = opened
    }
    const started = await body({ bus, down, db, metrics, reload })
    // Once running, a stop ends reloading first, so that no reload touches a part being stopped.
    down.add('reload on SIGHUP', async () => stopReloading())
    return started
  })
}

/** `cyborg up`: migrate, then conductor, agent and API in one process (in-process bus, or RabbitMQ with transport_url). */
export async function startAllInOne(
  config: Config,
  log: Logger,
  options: StartOptions = {},
): Promise<RunningService & { url: string }> {
  const agent = { ...agentOptions(config), stateDir: agentStateDir(config) }
  const https = loadApiTls(config) // a bad [ssl] file stops start-up before anything runs
  return withResources(
    config,
    log,
    options,
    { service: 'up', shared: false, database: true },
    async ({ bus, down, db, metrics, reload }) => {
      const database = db!
      const workers = config.api.api_workers ?? 1
      if (workers > 1)
        log.warn(
          { api_workers: workers },
          'cyborg up serves the API from this one process (its database and bus live in it): [api] api_workers is ignored; run cyborg api for several workers',
        )
      log.info(
        { database: database.safeUrl, bus: busKind(config), state_path: config.DEFAULT.state_path },
        'starting all-in-one',
      )
      await migrate(database, log)
      const events = eventSinks(config, log)
      down.add('notifier', () => events.close())
      const core = await startCore({
        db: database,
        bus,
        log,
        conductor: conductorOptions(config),
        agent,
        rpcTimeoutMs: rpcTimeoutMs(config),
        version: VERSION,
        placement: placementOptions(config, metrics),
        nova: novaOptions(config, metrics),
        metrics,
        eventSinks: events.sinks,
        quota: quotaLimits(config),
      })
      down.add('agent and conductor', () => core.stop())
      reloadConductor(reload, core.conductor)
      await firstDiscovery(core.agent, log)
      const { startHttpApi } = await import('./http.js')
      const api = await startHttpApi(config, {
        db: database,
        conductor: core.conductorClient,
        log,
        https,
        metrics,
        bus,
        reload,
      })
      down.add('api', () => api.app.close())
      const stopBeats = [CONDUCTOR_BINARY, API_BINARY].map((binary) =>
        startHeartbeat({ ...heartbeatOf(config, core.conductorClient, log), binary }),
      )
      down.add('heartbeats', () => Promise.all(stopBeats.map((stop) => stop())))
      log.info(
        { url: api.url },
        `cyborg is ready: API at ${api.url}/v2, agent on ${config.DEFAULT.host} with ${agent.enabledDrivers?.join(', ') || 'no drivers'}`,
      )
      return { url: api.url, stop: () => down.run() }
    },
  )
}

/** `cyborg api`: stateless HTTP API; writes go to the conductor over the shared bus. */
export async function startApiService(
  config: Config,
  log: Logger,
  options: StartOptions = {},
): Promise<RunningService & { url: string }> {
  const https = loadApiTls(config) // a bad [ssl] file stops start-up before anything runs
  return withResources(
    config,
    log,
    options,
    { service: 'api', shared: true, database: true },
    async ({ bus, down, db, metrics, reload }) => {
      const conductor = createConductorClient(bus, { timeoutMs: rpcTimeoutMs(config) })
      const { startHttpApi } = await import('./http.js')
      const api = await startHttpApi(config, {
        db: db!,
        conductor,
        log,
        https,
        metrics,
        bus,
        reload,
      })
      down.add('api', () => api.app.close())
      down.add(
        'heartbeat',
        startHeartbeat({ ...heartbeatOf(config, conductor, log), binary: API_BINARY }),
      )
      down.add('idle gc', startIdleGc())
      log.info(
        { url: api.url, database: db!.safeUrl, bus: busKind(config) },
        `cyborg api is ready at ${api.url}/v2`,
      )
      return { url: api.url, stop: () => down.run() }
    },
  )
}

/** `cyborg conductor`: the single writer, serving RPCs from the shared bus. */
export async function startConductorService(
  config: Config,
  log: Logger,
  options: StartOptions = {},
): Promise<RunningService> {
  return withResources(
    config,
    log,
    options,
    { service: 'conductor', shared: true, database: true },
    async ({ bus, down, db, metrics, reload }) => {
      const events = eventSinks(config, log)
      down.add('notifier', () => events.close())
      const core = await startCore({
        db: db!,
        bus,
        log,
        conductor: conductorOptions(config),
        agent: false,
        rpcTimeoutMs: rpcTimeoutMs(config),
        version: VERSION,
        placement: placementOptions(config, metrics),
        nova: novaOptions(config, metrics),
        metrics,
        eventSinks: events.sinks,
        quota: quotaLimits(config),
      })
      down.add('conductor', () => core.stop())
      reloadConductor(reload, core.conductor)
      down.add(
        'heartbeat',
        startHeartbeat({
          ...heartbeatOf(config, core.conductorClient, log),
          binary: CONDUCTOR_BINARY,
        }),
      )
      log.info({ database: db!.safeUrl, bus: busKind(config) }, 'cyborg conductor is ready')
      return { stop: () => down.run() }
    },
  )
}

/** `cyborg agent`: discovers this host's devices and reports them to the conductor over the shared bus. */
export async function startAgentService(
  config: Config,
  log: Logger,
  options: StartOptions = {},
): Promise<RunningService> {
  const agent = { ...agentOptions(config), stateDir: agentStateDir(config) }
  return withResources(
    config,
    log,
    options,
    { service: 'agent', shared: true, database: false },
    async ({ bus, down, metrics }) => {
      const core = await startCore({
        bus,
        log,
        conductor: false,
        agent,
        rpcTimeoutMs: rpcTimeoutMs(config),
        version: VERSION,
        placement: placementOptions(config, metrics),
        metrics,
      })
      down.add('agent', () => core.stop())
      log.info(
        { host: agent.host, drivers: agent.enabledDrivers, bus: busKind(config) },
        'cyborg agent is ready',
      )
      return { stop: () => down.run() }
    },
  )
}

/** A reload applies `[webhooks]` and `[metrics] fleet_refresh_seconds` to a running conductor. */
function reloadConductor(reload: Reloader, conductor: Conductor | undefined): void {
  if (conductor)
    reload.add({
      name: 'conductor',
      apply: (next) => conductor.reconfigure(liveConductorOptions(next)),
    })
}

/** What the API's and conductor's heartbeats share: this host, the version, `[agent] report_interval` (as agents). */
function heartbeatOf(config: Config, conductor: ConductorRpc, log: Logger) {
  return {
    conductor,
    host: config.DEFAULT.host,
    version: VERSION,
    intervalMs: config.agent.report_interval * 1000,
    log,
  }
}

/** The agent's state directory, `<state_path>/agent-<host>/` (its local cache). */
export function agentStateDir(config: Config): string {
  return join(
    config.DEFAULT.state_path,
    `agent-${config.DEFAULT.host.replace(/[^A-Za-z0-9._-]/g, '_')}`,
  )
}

async function migrate(db: DatabaseHandle, log: Logger): Promise<void> {
  const { migrateDatabase } = await import('./database.js')
  const applied = await migrateDatabase(db)
  if (applied.length > 0) log.info({ applied, database: db.safeUrl }, 'database migrated')
}

/**
 * Waits (boundedly) for the agent's first report, so that the API shows the devices from its first
 * answer. A driver failing is not fatal: the agent retries every period.
 */
async function firstDiscovery(
  agent: { discoverNow(): Promise<unknown> } | undefined,
  log: Logger,
): Promise<void> {
  if (!agent) return
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      log.warn(
        `first discovery still running after ${FIRST_DISCOVERY_WAIT_MS} ms; opening the API anyway`,
      )
      resolve()
    }, FIRST_DISCOVERY_WAIT_MS)
  })
  const report = agent.discoverNow().then(
    () => undefined,
    (err: unknown) =>
      log.warn({ err }, 'first discovery failed; the agent retries every periodic_interval'),
  )
  try {
    await Promise.race([report, timeout])
  } finally {
    clearTimeout(timer)
  }
}
