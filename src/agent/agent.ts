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
import { serveAgent } from '../rpc/agent-rpc.js'
import type { InventoryReportResult } from '../rpc/conductor-rpc.js'
import { InvalidStateError } from '../domain/errors.js'
import type { Agent, AgentCache, AgentDeps, AgentOptions, AgentState } from './agent-types.js'
import { agentHandlers, createAgentParts } from './agent-parts.js'
import { replayOutbox } from './outbox-replay.js'
import { reportOnce, type ConductorLink, type ReportMemo } from './report.js'
import { heartbeat, tick, type Period, type ReportLoopDeps } from './report-loop.js'
import { publishTelemetry } from './telemetry.js'

export { AGENT_BINARY } from './report.js'

export type * from './agent-types.js'

const keepNothing: AgentCache = { saveSnapshot: async () => {}, acknowledge: async () => {} }

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
  const controller = new AbortController()
  const { signal } = controller
  const ctx = { host, version, cache, log, signal, rediscover: () => discoverNow() }
  const parts = createAgentParts(deps, ctx)
  const { admin } = parts
  let state: AgentState = 'idle'
  let beats: NodeJS.Timeout | undefined
  let server: Subscription | undefined
  let queue: Promise<unknown> = Promise.resolve()
  const period: Period = { ticking: Promise.resolve() }
  const memo: ReportMemo = { beat: false }
  const link: ConductorLink = {
    conductor,
    host,
    version,
    autoActivate,
    placementRoot,
    cache,
    metrics,
    log,
  }
  const running = () => state === 'running'

  /** Runs `fn` after everything queued before it: discovery runs never overlap. */
  const serialized = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = queue.then(fn)
    queue = run.catch(() => {})
    return run
  }

  const discoverNow = (): Promise<InventoryReportResult> => {
    if (state === 'stopping' || state === 'stopped') {
      return Promise.reject(
        new InvalidStateError(`agent ${host} is ${state}`, { code: 'AGENT_STOPPED' }),
      )
    }
    return serialized(() =>
      reportOnce({
        ...link,
        admin,
        remote: parts.remote,
        listing: parts.listing,
        clock,
        beforeDiscovery: deps.beforeDiscovery,
        signal,
        discoverTimeoutMs,
        memo,
      }),
    )
  }

  const loop: ReportLoopDeps = {
    clock,
    log,
    periodicIntervalMs,
    running,
    discoverNow,
    heartbeat: () => heartbeat(link),
    publishTelemetry: () =>
      publishTelemetry({
        bus,
        host,
        clock,
        drivers: admin.enabled(),
        runs: memo.lastRuns,
        statsTimeoutMs,
        signal,
        periodMs: periodicIntervalMs,
        log,
      }),
    memo,
    period,
  }

  return {
    get state() {
      return state
    },
    async start() {
      if (state !== 'idle')
        throw new InvalidStateError(`agent ${host} is ${state}`, { code: 'AGENT_STARTED' })
      state = 'running'
      if (bus) server = await serveAgent(bus, host, agentHandlers(parts, deps, ctx), deps.metrics)
      log.info({ drivers: drivers.map((d) => d.name), periodicIntervalMs }, 'agent started')
      void serialized(() => replayOutbox({ ...link, running }))
      period.ticking = tick(loop)
      // The lease (issue 15): beats between discoveries, so that a silent agent shows within
      // [DEFAULT] service_down_time even when discovery runs rarely.
      if (reportIntervalMs !== undefined) {
        beats = setInterval(() => void heartbeat(link), reportIntervalMs)
        beats.unref()
      }
    },
    async stop() {
      if (state === 'stopping' || state === 'stopped') return
      state = 'stopping'
      clearTimeout(period.timer)
      clearInterval(beats)
      controller.abort(
        new InvalidStateError(`agent ${host} is stopping`, { code: 'AGENT_STOPPED' }),
      )
      await server?.unsubscribe()
      // A report waiting on a conductor that does not answer would hold SIGTERM for a whole RPC
      // timeout; after the grace period stop anyway: the outbox keeps the report for the next start.
      let grace: NodeJS.Timeout | undefined
      const waited = new Promise<void>((resolve) => (grace = setTimeout(resolve, stopGraceMs)))
      await Promise.race([Promise.all([period.ticking, queue]), waited])
      clearTimeout(grace)
      state = 'stopped'
      log.info('agent stopped')
    },
    discoverNow,
  }
}
