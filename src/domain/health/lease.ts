/**
 * Health and agent leases (docs/health.md, "Agent leases"): a silent agent's offered devices (ok
 * or degraded) are fenced `unknown` with the agent's reason, and its host's report hash forgotten
 * so that the agent's next heartbeat brings a full report; that report, not the heartbeat, lifts
 * the fence (report.ts), and a device leaving a lease fence's `unknown` then is the host's
 * `accelerator.agent.lease_regained`.
 */
import { isFencedHealth, isSilentAgentReason } from './report.js'
import type { DeviceHealthChange, DeviceHealthState } from './change.js'

/** A device of a silent agent's host, as loaded. */
export interface LeaseDevice extends DeviceHealthState {
  hostname: string
}

/** One host's lease fence: the agent's reason and its devices' changes. */
export interface HostLeaseFence {
  host: string
  reason: string
  changes: DeviceHealthChange[]
}

/**
 * The fences of silent `agents` over their hosts' loaded `devices`: one per host with an offered
 * device, in the order of the devices' first appearance; devices already fenced are left alone.
 */
export function leaseFences(
  agents: readonly { host: string; reason: string }[],
  devices: readonly LeaseDevice[],
): HostLeaseFence[] {
  const reasons = new Map(agents.map((a) => [a.host, a.reason]))
  const out = new Map<string, HostLeaseFence>()
  for (const d of devices) {
    const reason = reasons.get(d.hostname)
    if (reason === undefined || isFencedHealth(d.health)) continue
    const fence = out.get(d.hostname) ?? { host: d.hostname, reason, changes: [] }
    const transition = { from: d.health, to: 'unknown', reason }
    fence.changes.push({
      deviceId: d.deviceId,
      health: 'unknown',
      reason,
      transition,
      forceReport: true,
    })
    out.set(d.hostname, fence)
  }
  return [...out.values()]
}

/**
 * The devices whose change after a report lifts a lease fence: they left `unknown` and carried a
 * silent agent's reason before it (the host's `accelerator.agent.lease_regained`).
 */
export function leaseRegained(
  before: readonly { id: number; healthReason?: string | null }[],
  changes: readonly { deviceId: number; from: string }[],
): number[] {
  const fenced = new Set(before.filter((d) => isSilentAgentReason(d.healthReason)).map((d) => d.id))
  return changes
    .filter((c) => c.from === 'unknown' && fenced.has(c.deviceId))
    .map((c) => c.deviceId)
}
