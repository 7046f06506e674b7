/**
 * What the conductor's cleaning counts (issue 28): the clean messages it sends and the units they
 * carry, the write transactions that settle outcomes, the Placement syncs it asks for, and each
 * unit's time in `cleaning`, as
 * Prometheus metrics (docs/metrics.md) and as plain figures for benchmarks (`conductor.stats()`).
 */
import type { CleanSettlement, CleaningUnit } from '../../db/cleaning.js'
import { noopMetrics, type Metrics } from '../../domain/metrics.js'
import type { Clock } from '../../domain/time.js'

/** What this conductor's cleaning did since it started (benchmarks: per release, divide). */
export interface CleaningStats {
  /** Clean messages sent to agents (`cleanUnit` and `cleanUnits` together). */
  asks: number
  /** Units those messages carried. */
  askedUnits: number
  /** Write transactions that settled outcomes, and the outcomes they settled. */
  settleWrites: number
  settled: number
  /**
   * Placement syncs of a host that cleaning asked for (the window's after an ask, one after an
   * answer); a unit back within half the window costs none (docs/cleaning.md).
   */
  placementSyncs: number
}

/** The counters, and the hooks that feed them (clean-asks.ts `onSent`, clean-settle.ts). */
export function createCleaningCounters(metrics: Metrics = noopMetrics, clock: Clock) {
  const counts: CleaningStats = {
    asks: 0,
    askedUnits: 0,
    settleWrites: 0,
    settled: 0,
    placementSyncs: 0,
  }
  return {
    stats: (): CleaningStats => ({ ...counts }),
    onSent(method: 'cleanUnit' | 'cleanUnits', units: number) {
      counts.asks++
      counts.askedUnits += units
      metrics.inc('cyborg_clean_asks_total', { method })
      metrics.inc('cyborg_clean_asked_units_total', {}, units)
    },
    onPlacementSync() {
      counts.placementSyncs++
    },
    onBatch(size: number) {
      counts.settleWrites++
      metrics.observe('cyborg_clean_settle_batch_size', size)
    },
    onSettled(unit: CleaningUnit, outcome: CleanSettlement) {
      counts.settled++
      const since = unit.since === null ? NaN : Date.parse(unit.since)
      if (!Number.isFinite(since)) return
      const result =
        outcome.kind === 'cleaned'
          ? outcome.result
          : outcome.kind === 'failed'
            ? 'failed'
            : 'override'
      const seconds = Math.max(0, clock.now().getTime() - since) / 1000
      metrics.observe('cyborg_unit_cleaning_seconds', seconds, { result })
    },
  }
}
