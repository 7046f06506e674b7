/**
 * The agent (seed 000): discovers this host's accelerators on start and every period, reports the
 * snapshot to the conductor, and heartbeats. Runs never overlap. An unreachable conductor is
 * logged and retried next period; a failing driver stops that period's report, because a report
 * without its devices would delete them.
 *
 * With a cache (local-cache.ts) every snapshot is saved before it is sent and stays in the outbox
 * until the conductor acknowledges it; `start()` replays the outbox before its first discovery.
 * With a bus the agent serves AgentRpc (discover, the device operations of device-ops.ts over
 * `deps.hostProbe`, install, FPGA programming and runtime driver management of driver-admin.ts,
 * re-partitioning of device-configure.ts) and publishes telemetry on `cyborg.telemetry` every period.
 */
import { noopMetrics } from '../domain/metrics.js'
import type { Subscription } from '../bus/bus.js'
import { serveAgent, TELEMETRY_TOPIC } from '../rpc/agent-rpc.js'
import type { InventoryReportResult } from '../rpc/conductor-rpc.js'
import { DriverError, InvalidStateError } from '../domain/errors.js'
import type { InventorySnapshot } from '../domain/inventory/inventory.js'
import { buildSnapshot, discoverAll, type DriverRun } from './snapshot.js'
import type {
  Agent,
  AgentCache,
  AgentDeps,
  AgentOptions,
  AgentState,
  DriverState,
} from './agent-types.js'
import { createDeviceOps } from './device-ops.js'
import { createDriverAdmin } from './driver-admin.js'
import { createUnitCleaner } from './cleaning.js'
import { createDeviceConfigurer } from './device-configure.js'
import type { CleanRunner } from '../drivers/driver.js'
import { createDriverListing } from './driver-list.js'
import { createFpgaImages } from './fpga-images.js'
import { createRemoteRegistry } from './remote-registry.js'
import {
  buildTelemetry,
  collectDeviceStats,
  collectStats,
  type DriverStatsValues,
} from './telemetry.js'
import type { DeviceSample } from '../domain/device-telemetry.js'

/** The binary name agents heartbeat under. */
export const AGENT_BINARY = 'cyborg-agent'

export type * from './agent-types.js'

const keepNothing: AgentCache = { saveSnapshot: async () => {}, acknowledge: async () => {} }

/** Without `deps.runClean` this agent cannot clean: every clean is refused (CLEAN_UNSUPPORTED). */
const noCleaner: CleanRunner = () =>
  Promise.reject(
    new DriverError('this agent was started without a clean runner', { code: 'CLEAN_UNSUPPORTED' }),
  )

export function createAgent(deps: AgentDeps, options: AgentOptions): Agent {
  const { conductor, drivers, clock, bus, cache = keepNothing, metrics = noopMetrics } = deps
  const {
    host,
    periodicIntervalMs = 60_000,
    reportIntervalMs,
    autoActivate = false,
    version = '0.1.0',
    discoverTimeoutMs = 60_000,
    statsTimeoutMs = 5000,
    stopGraceMs = 5000,
  } = options
  const log = deps.log.child({ component: 'agent', host })
  const placementRoot = options.resourceProvider
    ? { resourceProvider: options.resourceProvider }
    : {}
  const deviceOps = createDeviceOps({ host: deps.hostProbe, log })
  const admin = createDriverAdmin({
    drivers,
    registry: deps.driverRegistry,
    baseOptions: deps.driverOptions ?? {},
    driverDeps: deps.hostProbe && { host: deps.hostProbe, hostname: host },
    store: {
      load: async () => cache.driverSettings?.(),
      save: async (settings) => cache.saveDriverSettings?.(settings),
    },
    rediscover: () => discoverNow(),
    log,
  })
  const listing = createDriverListing({
    host,
    version,
    names: drivers.map((d) => d.name),
    aliases: deps.driverRegistry.aliases,
    enabled: async () => {
      await admin.ready()
      return admin.enabled().map((d) => d.name)
    },
  })
  const remote = createRemoteRegistry({
    store: {
      load: async () => cache.remoteAccelerators?.(),
      save: async (list) => cache.saveRemoteAccelerators?.(list),
    },
    enabled: () => admin.enabled(),
    ready: () => admin.ready(),
    rediscover: () => discoverNow(),
    log,
  })
  /** The runs of the last discovery, for telemetry. */
  let lastRuns: DriverRun[] | undefined
  const controller = new AbortController()
  const cleaner = createUnitCleaner({
    owner: admin.owner,
    runClean: deps.runClean ?? noCleaner,
    signal: controller.signal,
    log,
  })
  const configurer = createDeviceConfigurer({
    owner: admin.owner,
    updateDriverOptions: admin.updateDriverOptions,
    rediscover: () => discoverNow(),
    freshReads: deps.beforeDiscovery,
    signal: controller.signal,
    log,
  })
  let state: AgentState = 'idle'
  let timer: NodeJS.Timeout | undefined
  let beats: NodeJS.Timeout | undefined
  let server: Subscription | undefined
  let queue: Promise<unknown> = Promise.resolve()
  let ticking: Promise<void> = Promise.resolve()

  /** Runs `fn` after everything queued before it: discovery runs never overlap. */
  const serialized = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = queue.then(fn)
    queue = run.catch(() => {})
    return run
  }

  /** Runs a cache call; a failing cache is logged, never fatal. */
  const cached = async (what: string, fn: () => Promise<void> | undefined) => {
    try {
      await fn()
    } catch (err) {
      log.warn({ err }, `agent cache: ${what} failed; continuing without it`)
    }
  }

  /** The hash of the last report the conductor accepted in full, as far as this process knows. */
  let accepted: string | undefined
  /** Whether this period's heartbeat went out already (carrying the inventory hash). */
  let beat = false
  /** Heartbeats with `hash`: true when the conductor still holds it (never from a conductor older than 1.2). */
  const confirmed = async (hash: string): Promise<boolean> => {
    const answer = await conductor.heartbeat({
      host,
      binary: AGENT_BINARY,
      version,
      inventoryHash: hash,
    })
    beat = true
    return answer?.inventoryCurrent === true
  }

  const runOnce = async (): Promise<InventoryReportResult> => {
    const { signal } = controller
    await admin.ready()
    await remote.feed()
    deps.beforeDiscovery?.()
    const { devices, failures, runs, byDriver } = await discoverAll(admin.enabled(), {
      signal,
      timeoutMs: discoverTimeoutMs,
    })
    admin.recordDiscovery(byDriver)
    lastRuns = runs
    for (const run of runs) {
      const labels = { driver: run.driver, outcome: run.ok ? 'ok' : 'error' }
      metrics.observe('cyborg_discovery_duration_seconds', run.durationMs / 1000, labels)
    }
    const at = clock.now().toISOString()
    const states: DriverState[] = runs.map((run) => {
      const error = failures.find((f) => f.driver === run.driver)?.error
      return {
        ...run,
        at,
        ...(error ? { error: { code: error.code, message: error.message } } : {}),
      }
    })
    listing.record(states)
    await cached('saving driver states', () => cache.saveDriverStates?.(states))
    if (failures.length > 0) {
      for (const { driver, error } of failures)
        log.warn({ driver, err: error }, 'driver discovery failed')
      const names = failures.map((f) => f.driver).join(', ')
      throw new DriverError(
        `discovery failed for ${names}; not reporting, so that their devices are kept`,
        {
          code: 'DISCOVERY_FAILED',
          details: {
            failures: failures.map((f) => ({
              driver: f.driver,
              code: f.error.code,
              message: f.error.message,
            })),
          },
        },
      )
    }
    const snapshot = buildSnapshot(host, devices)
    // Nothing changed since the conductor's last answer: confirm the hash instead of resending it all.
    if (snapshot.hash === accepted && (await confirmed(snapshot.hash))) {
      metrics.inc('cyborg_reports_total', { result: 'skipped' })
      log.debug({ hash: snapshot.hash }, 'inventory unchanged (confirmed)')
      return { changed: false, added: 0, updated: 0, removed: 0, pending: 0 }
    }
    await cached('saving the snapshot', () => cache.saveSnapshot(snapshot))
    const result = await conductor
      .reportInventory({ ...snapshot, autoActivate, ...placementRoot })
      .catch((err: unknown) => {
        metrics.inc('cyborg_reports_total', { result: 'failed' })
        throw err
      })
    metrics.inc('cyborg_reports_total', { result: 'sent' })
    accepted = result.pending === 0 ? snapshot.hash : undefined
    await cached('acknowledging the snapshot', () => cache.acknowledge(snapshot, result))
    if (result.changed) log.info({ ...result, hash: snapshot.hash }, 'inventory reported')
    else log.debug({ hash: snapshot.hash }, 'inventory unchanged')
    return result
  }

  const discoverNow = (): Promise<InventoryReportResult> => {
    if (state === 'stopping' || state === 'stopped') {
      return Promise.reject(
        new InvalidStateError(`agent ${host} is ${state}`, { code: 'AGENT_STOPPED' }),
      )
    }
    return serialized(runOnce)
  }

  /**
   * Sends the outbox (reports saved but never acknowledged: a crash, a lost bus) before anything
   * new, oldest first. At-least-once: the conductor's hash check makes a repeat cost nothing.
   * Stops at the first failure; the next discovery's snapshot supersedes what is left.
   */
  const replayOutbox = async () => {
    let pending: InventorySnapshot[] = []
    await cached('reading the outbox', async () => void (pending = (await cache.pending?.()) ?? []))
    for (const snapshot of pending) {
      if (state !== 'running') return
      if (snapshot.host !== host) {
        log.warn(
          { hash: snapshot.hash, reportHost: snapshot.host },
          'outbox holds another host’s report; skipping it',
        )
        continue
      }
      try {
        const result = await conductor.reportInventory({
          ...snapshot,
          autoActivate,
          ...placementRoot,
        })
        await cached('acknowledging a replayed report', () => cache.acknowledge(snapshot, result))
        metrics.inc('cyborg_reports_total', { result: 'replayed' })
        log.info({ ...result, hash: snapshot.hash }, 'replayed an unacknowledged report')
      } catch (err) {
        log.warn(
          { err, hash: snapshot.hash, pending: pending.length },
          'replaying the outbox failed; it stays until a report gets through',
        )
        return
      }
    }
  }

  const publishTelemetry = async () => {
    const runs = lastRuns
    if (!bus || !runs) return
    const stats = new Map<string, DriverStatsValues>()
    const devices: DeviceSample[] = []
    await Promise.all(
      admin.enabled().map(async (driver) => {
        const bounds = { timeoutMs: statsTimeoutMs, signal: controller.signal }
        const [values, samples] = await Promise.all([
          collectStats(driver, bounds),
          collectDeviceStats(driver, bounds),
        ])
        if (values) stats.set(driver.name, values)
        devices.push(...samples)
      }),
    )
    const extra = { devices, periodMs: periodicIntervalMs }
    try {
      await bus.publish(TELEMETRY_TOPIC, buildTelemetry(host, clock.now(), runs, stats, extra))
    } catch (err) {
      log.debug({ err }, 'telemetry not published')
    }
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
    beat = false
    await report
    // An unchanged inventory was confirmed by the heartbeat itself; otherwise send a plain one.
    if (!beat) await heartbeat()
    if (state === 'running') await publishTelemetry()
    if (state !== 'running') return
    const elapsed = clock.now().getTime() - started
    timer = setTimeout(() => void (ticking = tick()), Math.max(0, periodicIntervalMs - elapsed))
  }

  return {
    get state() {
      return state
    },
    async start() {
      if (state !== 'idle')
        throw new InvalidStateError(`agent ${host} is ${state}`, { code: 'AGENT_STARTED' })
      state = 'running'
      const images = createFpgaImages({
        images: deps.images,
        program: (req) => admin.programFpga(req),
        log,
      })
      if (bus)
        server = await serveAgent(
          bus,
          host,
          {
            discover: () => discoverNow(),
            ...deviceOps,
            ...admin,
            ...images,
            listDrivers: () => listing.listDrivers(),
            registerRemote: (req) => remote.registerRemote(req),
            cleanUnit: (req) => cleaner.cleanUnit(req),
            cleanUnits: (req) => cleaner.cleanUnits(req),
            abortClean: (req) => cleaner.abortClean(req),
            configureDevice: (req) => configurer.configureDevice(req),
          },
          deps.metrics,
        )
      log.info({ drivers: drivers.map((d) => d.name), periodicIntervalMs }, 'agent started')
      void serialized(replayOutbox)
      ticking = tick()
      // The lease (issue 15): beats between discoveries, so that a silent agent shows within
      // [DEFAULT] service_down_time even when discovery runs rarely.
      if (reportIntervalMs !== undefined) {
        beats = setInterval(() => void heartbeat(), reportIntervalMs)
        beats.unref()
      }
    },
    async stop() {
      if (state === 'stopping' || state === 'stopped') return
      state = 'stopping'
      clearTimeout(timer)
      clearInterval(beats)
      controller.abort(
        new InvalidStateError(`agent ${host} is stopping`, { code: 'AGENT_STOPPED' }),
      )
      await server?.unsubscribe()
      // A report waiting on a conductor that does not answer would hold SIGTERM for a whole RPC
      // timeout; after the grace period stop anyway: the outbox keeps the report for the next start.
      let grace: NodeJS.Timeout | undefined
      const waited = new Promise<void>((resolve) => (grace = setTimeout(resolve, stopGraceMs)))
      await Promise.race([Promise.all([ticking, queue]), waited])
      clearTimeout(grace)
      state = 'stopped'
      log.info('agent stopped')
    },
    discoverNow,
  }
}
