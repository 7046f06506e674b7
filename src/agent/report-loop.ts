/**
 * The agent's period (agent.ts): each tick reports (report.ts), heartbeats unless the report's hash
 * confirmation was the heartbeat already, publishes telemetry, and schedules the next tick one
 * period after this one began. A failed report or heartbeat is logged and retried next period.
 */
import type { Logger } from '../domain/logger.js'
import type { Clock } from '../domain/time.js'
import type { InventoryReportResult } from '../rpc/conductor-rpc.js'
import { AGENT_BINARY, type ConductorLink, type ReportMemo } from './report.js'

/** The next tick's timer, and the tick in progress (that `stop()` waits for). */
export interface Period {
  timer?: NodeJS.Timeout | undefined
  ticking: Promise<void>
}

export interface ReportLoopDeps {
  clock: Clock
  log: Logger
  periodicIntervalMs: number
  /** Whether the agent still runs: a stopping agent schedules nothing more. */
  running(): boolean
  /** The agent's serialized discovery and report. */
  discoverNow(): Promise<InventoryReportResult>
  heartbeat(): Promise<void>
  publishTelemetry(): Promise<void>
  memo: ReportMemo
  period: Period
}

/** A plain heartbeat; a failure is logged, never thrown. */
export async function heartbeat(
  deps: Pick<ConductorLink, 'conductor' | 'host' | 'version' | 'log'>,
): Promise<void> {
  try {
    await deps.conductor.heartbeat({ host: deps.host, binary: AGENT_BINARY, version: deps.version })
  } catch (err) {
    deps.log.warn({ err }, 'heartbeat failed; retrying next period')
  }
}

/** One period: report, heartbeat, telemetry, then the next tick's timer (while running). */
export async function tick(deps: ReportLoopDeps): Promise<void> {
  const { clock, period } = deps
  period.timer = undefined
  const started = clock.now().getTime()
  const report = deps.discoverNow().catch((err: unknown) => {
    if (deps.running()) deps.log.warn({ err }, 'inventory report failed; retrying next period')
  })
  deps.memo.beat = false
  await report
  // An unchanged inventory was confirmed by the heartbeat itself; otherwise send a plain one.
  if (!deps.memo.beat) await deps.heartbeat()
  if (deps.running()) await deps.publishTelemetry()
  if (!deps.running()) return
  const elapsed = clock.now().getTime() - started
  period.timer = setTimeout(
    () => void (period.ticking = tick(deps)),
    Math.max(0, deps.periodicIntervalMs - elapsed),
  )
}
