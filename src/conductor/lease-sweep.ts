/**
 * Agent leases (issue 15, in Nova's convention): an agent heartbeats every `[agent]
 * report_interval`; one whose last beat is older than `[DEFAULT] service_down_time` is down, and
 * its host's devices are fenced: health `unknown`, with a reason naming the agent and since when.
 * A fenced device is not offered (Placement `reserved = total`; binds and v1 attaches pass it over).
 *
 * Every conductor sweeps; the sweep is one indexed query when nothing has expired, and the fence
 * is a conditional UPDATE that re-checks the lease in its own statement, so N conductors sweeping
 * at once fence each device once and a beat that lands meanwhile wins. The fence also forgets the
 * host's accepted report hash: the agent's next report is then diffed in full, and that report,
 * not a heartbeat alone, lifts the fence (src/domain/inventory/inventory-diff.ts). The fence is
 * decided in src/domain/health/lease.ts and written by src/db/device-health.ts.
 */
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { DatabaseHandle } from '../db/core/connection.js'
import type { GroupCommitter, WriteTrx } from '../db/core/group-commit.js'
import type { HealthTransition } from '../db/health-transitions.js'
import { applyLeaseFences } from '../db/device-health.js'
import { lockOfferedDevices } from '../db/lease-fence.js'
import { AGENT_BINARY, listSilentAgents } from '../db/service-rows.js'
import { silentAgentReason as reasonFor } from '../domain/health/report.js'
import { leaseFences } from '../domain/health/lease.js'
import type { Logger } from '../domain/logger.js'
import { formatTimestamp, type Clock } from '../domain/time.js'
import type { Metrics } from '../domain/metrics.js'

export interface LeaseSweepDeps {
  db: DatabaseHandle
  committer: Pick<GroupCommitter, 'run'>
  log: Logger
  clock: Clock
  /** After a fence: bring Placement in step with the host. */
  syncPlacement: (host: string) => Promise<unknown>
}

/** Hosts fenced per transaction. */
const HOSTS_PER_TRANSACTION = 1000
/** Placement syncs in flight at once after a sweep. */
const SYNC_CONCURRENCY = 8

/** The reason a silent agent's devices carry, e.g. `agent cyborg-agent@compute-7 silent since …`. */
export function silentAgentReason(host: string, lastSeen: string): string {
  return reasonFor(AGENT_BINARY, host, lastSeen)
}

/** The time before which an agent's last beat means it is down. */
export function leaseCutoff(clock: Clock, serviceDownTimeMs: number): string {
  return formatTimestamp(new Date(clock.now().getTime() - serviceDownTimeMs))
}

/** One sweep: fences the devices of every agent past its lease; resolves with the hosts fenced. */
export async function sweepLeases(
  deps: LeaseSweepDeps,
  serviceDownTimeMs: number,
): Promise<string[]> {
  const { db, committer, log, clock } = deps
  const cutoff = leaseCutoff(clock, serviceDownTimeMs)
  const silent = await listSilentAgents(db.db, cutoff)
  const fenced: string[] = []
  for (let i = 0; i < silent.length; i += HOSTS_PER_TRANSACTION) {
    if (i > 0) await nextTurn()
    const agents = silent.slice(i, i + HOSTS_PER_TRANSACTION).map(({ host, lastSeen }) => ({
      host,
      reason: silentAgentReason(host, lastSeen),
    }))
    const now = formatTimestamp(clock.now())
    // Another conductor may fence the same hosts at once: only the one whose UPDATE wins logs it.
    const transitions = await committer.run((trx) =>
      fenceSilentAgents(trx, agents, { cutoff, now }),
    )
    const byHost = new Map<string, string[]>()
    for (const t of transitions)
      byHost.set(t.hostname, [...(byHost.get(t.hostname) ?? []), t.deviceUuid])
    for (const [host, devices] of byHost) {
      const reason = transitions.find((t) => t.hostname === host)!.reason
      log.warn({ host, devices }, `devices fenced (health unknown): ${reason}`)
      fenced.push(host)
    }
  }
  await syncAll(fenced, deps.syncPlacement)
  return fenced
}

/** One sweep of the conductor's timer, counted (`cyborg_lease_sweeps_total`, `cyborg_lease_fences_total`); a failure is logged. */
export async function leaseSweepPass(
  deps: LeaseSweepDeps & { metrics: Metrics },
  serviceDownTimeMs: number,
): Promise<void> {
  const { metrics, ...sweep } = deps
  try {
    const fenced = await sweepLeases(sweep, serviceDownTimeMs)
    metrics.inc('cyborg_lease_sweeps_total', { outcome: 'ok' })
    if (fenced.length > 0) metrics.inc('cyborg_lease_fences_total', {}, fenced.length)
  } catch (err) {
    metrics.inc('cyborg_lease_sweeps_total', { outcome: 'error' })
    deps.log.warn({ err }, 'lease sweep failed; next pass retries')
  }
}

/** Sweeps every `intervalMs` when there are leases (`serviceDownTimeMs` set); returns the stop function. */
export function startLeaseSweep(
  deps: LeaseSweepDeps & { metrics: Metrics },
  serviceDownTimeMs: number | undefined,
  intervalMs: number,
): () => void {
  if (serviceDownTimeMs === undefined) return () => {}
  const timer = setInterval(() => void leaseSweepPass(deps, serviceDownTimeMs), intervalMs)
  timer.unref()
  return () => clearInterval(timer)
}

/**
 * Fences the offered devices of silent `agents`, in the caller's transaction: load (their offered
 * devices, locked) → decide (src/domain/health/lease.ts) → apply (the UPDATE re-checks the lease).
 */
export async function fenceSilentAgents(
  trx: WriteTrx,
  agents: readonly { host: string; reason: string }[],
  options: { cutoff: string; now: string },
): Promise<HealthTransition[]> {
  const rows = await lockOfferedDevices(
    trx,
    agents.map((a) => a.host),
  )
  const fences = leaseFences(
    agents,
    rows.map((r) => ({
      deviceId: r.id,
      hostname: r.hostname,
      health: r.health,
      healthReason: r.health_reason,
    })),
  )
  return applyLeaseFences(trx, fences, new Map(rows.map((r) => [r.id, r])), options)
}

/** Brings Placement in step with each host, a few at a time; a failure is the sync's own to log. */
async function syncAll(hosts: readonly string[], sync: (host: string) => Promise<unknown>) {
  let next = 0
  const worker = async () => {
    while (next < hosts.length) await sync(hosts[next++]!)
  }
  await Promise.all(Array.from({ length: Math.min(SYNC_CONCURRENCY, hosts.length) }, worker))
}
