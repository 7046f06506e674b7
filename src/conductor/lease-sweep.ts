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
 * not a heartbeat alone, lifts the fence (src/domain/inventory-diff.ts).
 */
import type { DatabaseHandle } from '../db/connection.js'
import type { GroupCommitter } from '../db/group-commit.js'
import { updateDevicesOfSilentAgent } from '../db/devices.js'
import { AGENT_BINARY, deleteReportHash, listSilentAgents } from '../db/services.js'
import type { Logger } from '../domain/logger.js'
import { formatTimestamp, type Clock } from '../domain/time.js'

export interface LeaseSweepDeps {
  db: DatabaseHandle
  committer: Pick<GroupCommitter, 'run'>
  log: Logger
  clock: Clock
  /** After a fence: bring Placement in step with the host. */
  syncPlacement: (host: string) => Promise<unknown>
}

/** The reason a silent agent's devices carry, e.g. `agent cyborg-agent@compute-7 silent since …`. */
export function silentAgentReason(host: string, lastSeen: string): string {
  return `agent ${AGENT_BINARY}@${host} silent since ${lastSeen}`
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
  const fenced: string[] = []
  for (const { host, lastSeen } of await listSilentAgents(db.db, cutoff)) {
    const reason = silentAgentReason(host, lastSeen)
    const now = formatTimestamp(clock.now())
    const changed = await committer.run(async (trx) => {
      const count = await updateDevicesOfSilentAgent(trx, host, { cutoff, reason, now })
      if (count > 0) await deleteReportHash(trx, host)
      return count
    })
    if (changed === 0) continue // another conductor fenced it first, or the agent came back
    log.warn({ host, devices: changed, lastSeen }, `devices fenced: ${reason}`)
    fenced.push(host)
    await deps.syncPlacement(host)
  }
  return fenced
}
