/**
 * The conductor's fleet gauges (docs/metrics.md): devices, deployables, attach handles, requests
 * and agents, counted from the database every `[metrics] fleet_refresh_seconds` on a timer of
 * their own, never per scrape. Every conductor sets them (each serves the same counts; Prometheus
 * queries should aggregate with `max by (…)` over conductors, or scrape one).
 */
import type { ReadDb } from '../db/core/connection.js'
import { getFleetCounts } from '../db/reads/fleet-counts.js'
import type { Logger } from '../domain/logger.js'
import { secondsSince, type Metrics } from '../domain/metrics.js'

/** Counts the fleet once and replaces every fleet gauge. */
export async function refreshFleetGauges(
  db: ReadDb,
  metrics: Metrics,
  leaseCutoff: string,
): Promise<void> {
  const start = performance.now()
  const c = await getFleetCounts(db, leaseCutoff)
  metrics.replace(
    'cyborg_devices',
    c.devices.map(({ n, ...labels }) => ({ labels, value: n })),
  )
  metrics.replace(
    'cyborg_deployables',
    c.deployables.map(({ host, removalPending, n }) => ({
      labels: { host, removal_pending: String(removalPending) },
      value: n,
    })),
  )
  metrics.replace(
    'cyborg_attach_handles',
    c.handles.map(({ host, state, n }) => ({ labels: { host, state }, value: n })),
  )
  metrics.replace(
    'cyborg_arqs',
    c.arqs.map(({ state, n }) => ({ labels: { state }, value: n })),
  )
  metrics.replace('cyborg_agents', [
    { labels: { state: 'up' }, value: c.agents.up },
    { labels: { state: 'down' }, value: c.agents.down },
  ])
  metrics.replace('cyborg_fleet_refresh_duration_seconds', [
    { labels: {}, value: secondsSince(start) },
  ])
}

/** Refreshes the gauges now and every `intervalMs`; returns the stop function. */
export function startFleetGauges(
  deps: { db: ReadDb; metrics: Metrics; log: Logger; leaseCutoff: () => string },
  intervalMs: number,
): () => void {
  // A refresh still running when the next period comes is not doubled: that one is skipped.
  let running: Promise<void> | undefined
  const run = () =>
    (running ??= refreshFleetGauges(deps.db, deps.metrics, deps.leaseCutoff())
      .catch((err: unknown) =>
        deps.log.warn({ err }, 'fleet gauges not refreshed; next period retries'),
      )
      .finally(() => (running = undefined)))
  void run()
  const timer = setInterval(() => void run(), intervalMs)
  timer.unref()
  return () => clearInterval(timer)
}

export interface FleetGauges {
  /** Restarts the timer with a new period (`[metrics] fleet_refresh_seconds` reloaded); same period: nothing. */
  reconfigure(intervalMs: number): void
  stop(): void
}

/** The fleet gauges on their timer, when there are metrics; without them, nothing runs. */
export function createFleetGauges(
  deps: { db: ReadDb; metrics?: Metrics | undefined; log: Logger; leaseCutoff: () => string },
  intervalMs: number,
): FleetGauges {
  const { metrics } = deps
  const start = (ms: number) => metrics && startFleetGauges({ ...deps, metrics }, ms)
  let current = intervalMs
  let stop = start(current)
  return {
    reconfigure(ms) {
      if (ms === current) return
      current = ms
      stop?.()
      stop = start(current)
    },
    stop: () => stop?.(),
  }
}
