/**
 * A device's health after a clean outcome (docs/cleaning.md): a failed clean fences the device
 * (`failed`, reason `clean failed: …`); a clean that succeeds, or an override, lifts that fence once
 * no unit of the device is left failed, and the host's next report is diffed in full so that the
 * driver's own health applies.
 */
import { CLEAN_FAILED_PREFIX, isCleanFailedReason } from './report.js'
import type { DeviceHealthChange, DeviceHealthState } from './change.js'

/** How the clean ended, as health sees it: failed (with the agent's reason), or not. */
export type CleanHealthOutcome = { failed: true; reason: string } | { failed: false }

/**
 * Whether `healthAfterClean` needs to know how many units of the device are left failed (a
 * success on a device fenced by a failed clean); load the count only then.
 */
export function cleanLiftNeedsFailedUnits(
  cur: DeviceHealthState,
  outcome: CleanHealthOutcome,
): boolean {
  return !outcome.failed && isCleanFailedReason(cur.healthReason)
}

/** Whether a clean outcome may change `cur`'s health at all (a failure, or a success on a device fenced by a failed clean). */
export function cleanMayChangeHealth(cur: DeviceHealthState, outcome: CleanHealthOutcome): boolean {
  return outcome.failed || cleanLiftNeedsFailedUnits(cur, outcome)
}

/**
 * The change a clean outcome makes to `cur`, or undefined. `failedUnitsLeft`: the device's units
 * still failed after this settle, when `cleanLiftNeedsFailedUnits` (otherwise ignored; unknown
 * means no lift).
 */
export function healthAfterClean(
  cur: DeviceHealthState,
  outcome: CleanHealthOutcome,
  failedUnitsLeft?: number,
): DeviceHealthChange | undefined {
  const { deviceId } = cur
  if (outcome.failed) {
    const reason = `${CLEAN_FAILED_PREFIX}${outcome.reason}`.slice(0, 255)
    if (cur.health !== 'failed') {
      const transition = { from: cur.health, to: 'failed', reason }
      return { deviceId, health: 'failed', reason, transition, forceReport: false }
    }
    // Already failed for another reason: the clean's reason takes over, so that it stays fenced.
    if (!isCleanFailedReason(cur.healthReason)) return { deviceId, reason, forceReport: false }
    return undefined
  }
  if (!cleanLiftNeedsFailedUnits(cur, outcome) || failedUnitsLeft !== 0) return undefined
  const transition = { from: cur.health, to: 'ok', reason: null }
  return { deviceId, health: 'ok', reason: null, transition, forceReport: true }
}
