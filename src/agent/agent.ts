/**
 * The agent (seed 000): discovers this host's accelerators on start and every period, reports the
 * snapshot to the conductor, and heartbeats. Runs never overlap. An unreachable conductor is
 * logged and retried next period; a failing driver stops that period's report, because a report
 * without its devices would delete them.
 */
import type { MessageBus, Subscription } from '../bus/bus.js'
import type { AcceleratorDriver } from '../drivers/driver.js'
import { serveAgent } from '../rpc/agent-rpc.js'
import type { ConductorRpc, InventoryReportResult } from '../rpc/conductor-rpc.js'
import { DriverError, InvalidStateError } from '../domain/errors.js'
import type { InventorySnapshot } from '../domain/inventory.js'
import type { Logger } from '../domain/logger.js'
import type { Clock } from '../domain/time.js'
import { buildSnapshot, discoverAll } from './snapshot.js'

/** The binary name agents heartbeat under. */
export const AGENT_BINARY = 'cyborg-agent'

/**
 * Where the agent keeps what it sends (the crash-proof local cache of seed 000 plugs in here).
 * The default keeps nothing.
 */
export interface AgentCache {
  /** Called with every snapshot before it is sent. */
  saveSnapshot(snapshot: InventorySnapshot): Promise<void>
  /** Called once the conductor has accepted `snapshot`. */
  acknowledge(snapshot: InventorySnapshot, result: InventoryReportResult): Promise<void>
}

export interface AgentDeps {
  conductor: ConductorRpc
  drivers: readonly AcceleratorDriver[]
  log: Logger
  clock: Clock
  /** When given, `start()` serves the agent RPC (`discover`) on `cyborg.agent.<host>`. */
  bus?: MessageBus
  /** @default a cache that keeps nothing */
  cache?: AgentCache
}

export interface AgentOptions {
  /** This host's name, as reported to the conductor. */
  host: string
  /** Time between discovery runs (and heartbeats). @default 60000 */
  periodicIntervalMs?: number
  /** New devices become `active` at once instead of `inactive`. @default false */
  autoActivate?: boolean
  /** Version sent with heartbeats. @default '0.1.0' */
  version?: string
  /** A driver whose discovery takes longer fails for that run. @default 60000 */
  discoverTimeoutMs?: number
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

const keepNothing: AgentCache = { saveSnapshot: async () => {}, acknowledge: async () => {} }

export function createAgent(deps: AgentDeps, options: AgentOptions): Agent {
  const { conductor, drivers, clock, bus, cache = keepNothing } = deps
  const {
    host,
    periodicIntervalMs = 60_000,
    autoActivate = false,
    version = '0.1.0',
    discoverTimeoutMs = 60_000,
  } = options
  const log = deps.log.child({ component: 'agent', host })
  const controller = new AbortController()
  let state: AgentState = 'idle'
  let timer: NodeJS.Timeout | undefined
  let server: Subscription | undefined
  let queue: Promise<unknown> = Promise.resolve()
  let ticking: Promise<void> = Promise.resolve()

  /** Runs `fn` after everything queued before it: discovery runs never overlap. */
  const serialized = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = queue.then(fn)
    queue = run.catch(() => {})
    return run
  }

  const runOnce = async (): Promise<InventoryReportResult> => {
    const { signal } = controller
    const { devices, failures } = await discoverAll(drivers, { signal, timeoutMs: discoverTimeoutMs })
    if (failures.length > 0) {
      for (const { driver, error } of failures) log.warn({ driver, err: error }, 'driver discovery failed')
      const names = failures.map((f) => f.driver).join(', ')
      throw new DriverError(`discovery failed for ${names}; not reporting, so that their devices are kept`, {
        code: 'DISCOVERY_FAILED',
        details: {
          failures: failures.map((f) => ({ driver: f.driver, code: f.error.code, message: f.error.message })),
        },
      })
    }
    const snapshot = buildSnapshot(host, devices)
    await cache.saveSnapshot(snapshot)
    const result = await conductor.reportInventory({ ...snapshot, autoActivate })
    await cache.acknowledge(snapshot, result)
    if (result.changed) log.info({ ...result, hash: snapshot.hash }, 'inventory reported')
    else log.debug({ hash: snapshot.hash }, 'inventory unchanged')
    return result
  }

  const discoverNow = (): Promise<InventoryReportResult> => {
    if (state === 'stopping' || state === 'stopped') {
      return Promise.reject(new InvalidStateError(`agent ${host} is ${state}`, { code: 'AGENT_STOPPED' }))
    }
    return serialized(runOnce)
  }

  const heartbeat = async () => {
    try {
      await conductor.heartbeat({ host, binary: AGENT_BINARY, version })
    } catch (err) {
      log.warn({ err }, 'heartbeat failed; retrying next period')
    }
  }

  const tick = async () => {
    timer = undefined
    const started = clock.now().getTime()
    const report = discoverNow().catch((err: unknown) => {
      if (state === 'running') log.warn({ err }, 'inventory report failed; retrying next period')
    })
    await Promise.all([heartbeat(), report])
    if (state !== 'running') return
    const elapsed = clock.now().getTime() - started
    timer = setTimeout(() => void (ticking = tick()), Math.max(0, periodicIntervalMs - elapsed))
  }

  return {
    get state() {
      return state
    },
    async start() {
      if (state !== 'idle') throw new InvalidStateError(`agent ${host} is ${state}`, { code: 'AGENT_STARTED' })
      state = 'running'
      if (bus) server = await serveAgent(bus, host, { discover: () => discoverNow() })
      log.info({ drivers: drivers.map((d) => d.name), periodicIntervalMs }, 'agent started')
      ticking = tick()
    },
    async stop() {
      if (state === 'stopping' || state === 'stopped') return
      state = 'stopping'
      clearTimeout(timer)
      controller.abort(new InvalidStateError(`agent ${host} is stopping`, { code: 'AGENT_STOPPED' }))
      await server?.unsubscribe()
      await Promise.all([ticking, queue])
      state = 'stopped'
      log.info('agent stopped')
    },
    discoverNow,
  }
}
