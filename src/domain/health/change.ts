/**
 * What a health decision (clean.ts, configure.ts, lease.ts; a report's is report.ts) asks
 * of the one writer of the health row (src/db/device-health.ts).
 */

/** A change of one device's health row, decided from its loaded state. */
export interface DeviceHealthChange {
  deviceId: number
  /**
   * The new state (and `healthy_reports` back to 0). Absent: a change of reason alone, which
   * keeps the state and the damping count and is not a transition.
   */
  health?: string
  /** The new `health_reason` (null when ok). */
  reason: string | null
  /** The recorded transition (with its `accelerator.device.health_changed` event); absent: none. */
  transition?: { from: string; to: string; reason: string | null }
  /** The host's report hash is forgotten, so that its next report is diffed in full. */
  forceReport: boolean
}

/** What a decision reads of a device's row. */
export interface DeviceHealthState {
  deviceId: number
  health: string
  healthReason: string | null
}

/** The health a device has after `change` (none: as it was). */
export function healthAfter(
  cur: DeviceHealthState,
  change: DeviceHealthChange | undefined,
): { health: string; healthReason: string | null } {
  if (change === undefined) return { health: cur.health, healthReason: cur.healthReason }
  return { health: change.health ?? cur.health, healthReason: change.reason }
}
