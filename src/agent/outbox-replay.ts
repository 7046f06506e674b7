/**
 * The agent's outbox replay on start (agent.ts): reports saved in the cache but never acknowledged
 * (a crash, a lost bus) are sent before anything new, oldest first. At-least-once: the conductor's
 * hash check makes a repeat cost nothing. Stops at the first failure, or when the agent stops; the
 * next discovery's snapshot supersedes what is left. Another host's report is skipped with a warning.
 */
import type { InventorySnapshot } from '../domain/inventory/inventory.js'
import { cached, type ConductorLink } from './report.js'

export interface OutboxReplayDeps extends Omit<ConductorLink, 'version'> {
  /** Whether the agent still runs: a stopping agent replays nothing more. */
  running(): boolean
}

/** Sends the outbox, oldest first; never throws. */
export async function replayOutbox(deps: OutboxReplayDeps): Promise<void> {
  const { cache, log, host } = deps
  let pending: InventorySnapshot[] = []
  await cached(
    log,
    'reading the outbox',
    async () => void (pending = (await cache.pending?.()) ?? []),
  )
  for (const snapshot of pending) {
    if (!deps.running()) return
    if (snapshot.host !== host) {
      log.warn(
        { hash: snapshot.hash, reportHost: snapshot.host },
        'outbox holds another host’s report; skipping it',
      )
      continue
    }
    try {
      const result = await deps.conductor.reportInventory({
        ...snapshot,
        autoActivate: deps.autoActivate,
        ...deps.placementRoot,
      })
      await cached(log, 'acknowledging a replayed report', () =>
        cache.acknowledge(snapshot, result),
      )
      deps.metrics.inc('cyborg_reports_total', { result: 'replayed' })
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
