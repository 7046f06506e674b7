/**
 * A device's health after an inventory report (issue 15; pure, used by inventory-diff.ts).
 *
 * - Something of the device vanished while in use: `failed`, marked with MISSING_REASON.
 * - Otherwise it takes the health the driver reported (absent: ok). That also clears the missing
 *   mark and lifts a lease fence (`unknown` because the agent was silent): a full report brings the
 *   device back.
 * - Damping: a device fenced by its own health (`failed`, or `unknown` from a probe) that reports
 *   healthy again stays fenced until it has reported healthy `recoveryReports` times in a row
 *   (`[conductor] health_recovery_reports`). The count is kept in `healthy_reports`; the caller
 *   must not keep the report's hash while a device is recovering, so that the next report is
 *   diffed again even when it is unchanged.
 * - A failed clean (`clean failed: …`, set by the conductor) stays until a clean succeeds or an
 *   operator forces the unit back in service (docs/cleaning.md); reports do not lift it.
 * - A change of reason alone (a counter that grew) updates the reason and its time, but is not a
 *   transition: transitions are changes of state, logged once and recorded.
 */
import type { ReportedHealth } from '../inventory/inventory.js'

/** The lifecycle_reason of a device kept only because something of it vanished while in use. */
export const MISSING_REASON = 'missing from the last inventory report'

const SILENT = / silent since /

/** The reason a silent agent's devices carry: `agent cyborg-agent@compute-7 silent since …`. */
export function silentAgentReason(binary: string, host: string, lastSeen: string): string {
  return `agent ${binary}@${host} silent since ${lastSeen}`
}

/** Whether a health reason is a lease fence's (set by the conductor's sweep, not by a driver). */
export function isSilentAgentReason(reason: string | null | undefined): boolean {
  return reason != null && reason.startsWith('agent ') && SILENT.test(reason)
}

/** The health reason a failed clean sets (docs/cleaning.md): it stays until a clean or an override. */
export const CLEAN_FAILED_PREFIX = 'clean failed: '

/** Whether a health reason is a failed clean's (set by the conductor, not by a driver). */
export function isCleanFailedReason(reason: string | null | undefined): boolean {
  return reason != null && reason.startsWith(CLEAN_FAILED_PREFIX)
}

/**
 * The health reason a configure that could not put the old layout back sets (docs/drivers.md):
 * it stays until a configure succeeds.
 */
export const CONFIGURE_FAILED_PREFIX = 'configure failed: '

/** Whether a health reason is a conductor's fence that reports do not lift (clean or configure). */
export function isConductorFenceReason(reason: string | null | undefined): boolean {
  return isCleanFailedReason(reason) || (reason?.startsWith(CONFIGURE_FAILED_PREFIX) ?? false)
}

/** Whether a health state is fenced (not offered). */
export const isFencedHealth = (health: string): boolean => health !== 'ok' && health !== 'degraded'

/** What the diff needs of a device row. */
export interface HealthRow {
  health: string
  healthReason?: string | null
  lifecycleReason: string | null
  /** Healthy reports in a row while fenced. */
  healthyReports?: number
}

/** The columns to set. */
export interface HealthSet {
  health?: string
  healthReason?: string | null
  lifecycleReason?: string | null
  healthyReports?: number
}

export interface HealthOutcome {
  /** Columns to write; undefined when the row stays as it is. */
  set?: HealthSet
  /** A change of state (to record and log). */
  transition?: { from: string; to: string; reason: string | null }
  /** Held back by damping: the report's hash must not be kept. */
  recovering: boolean
}

/** The device's health after a report (see the module comment). `recoveryReports` ≥ 1. */
export function nextHealth(
  cur: HealthRow,
  missing: boolean,
  reported: ReportedHealth | undefined,
  recoveryReports: number,
): HealthOutcome {
  const marked = cur.health === 'failed' && cur.lifecycleReason === MISSING_REASON
  const streak = cur.healthyReports ?? 0
  if (missing) {
    if (marked) return { recovering: false }
    return change(cur, 'failed', MISSING_REASON, { lifecycleReason: MISSING_REASON })
  }
  // A failed clean (or a configure that could not restore the old layout) fences the device until
  // an operator re-cleans, overrides or configures it again: reports leave it.
  if (cur.health === 'failed' && isConductorFenceReason(cur.healthReason))
    return { recovering: false }
  const state = reported?.state ?? 'ok'
  const reason = state === 'ok' ? null : (reported?.reason ?? null)
  const damped =
    !marked &&
    isFencedHealth(cur.health) &&
    !isFencedHealth(state) &&
    !isSilentAgentReason(cur.healthReason) &&
    streak + 1 < recoveryReports
  if (damped) return { set: { healthyReports: streak + 1 }, recovering: true }
  if (!marked && cur.health === state && (cur.healthReason ?? null) === reason) {
    return streak === 0 ? { recovering: false } : { set: { healthyReports: 0 }, recovering: false }
  }
  return change(cur, state, reason, marked ? { lifecycleReason: null } : {})
}

function change(
  cur: HealthRow,
  to: string,
  reason: string | null,
  extra: HealthSet,
): HealthOutcome {
  const set: HealthSet = { health: to, healthReason: reason, ...extra }
  if ((cur.healthyReports ?? 0) !== 0) set.healthyReports = 0
  const transition = cur.health === to ? undefined : { from: cur.health, to, reason }
  return { set, ...(transition ? { transition } : {}), recovering: false }
}
