/**
 * A device's health after a configure (docs/drivers.md, "Configure"): one that failed and could not
 * put the old layout back fences the device (`failed`, reason `configure failed: …`); reports do not
 * lift it (report.ts), a later configure that succeeds does, and then the host's next report
 * is diffed in full so that the driver's own health applies.
 */
import { CONFIGURE_FAILED_PREFIX } from './report.js'
import type { DeviceHealthChange, DeviceHealthState } from './change.js'

/** Whether `cur` is fenced by a configure that failed. */
export function isConfigureFenced(
  cur: Pick<DeviceHealthState, 'health' | 'healthReason'>,
): boolean {
  return cur.health === 'failed' && (cur.healthReason?.startsWith(CONFIGURE_FAILED_PREFIX) ?? false)
}

/**
 * The change a configure makes to `cur`, or undefined: `failure` is why it failed without restoring
 * the old layout (fence), or null for a configure that succeeded (lift a configure's fence).
 */
export function healthAfterConfigure(
  cur: DeviceHealthState,
  failure: string | null,
): DeviceHealthChange | undefined {
  const { deviceId } = cur
  if (failure === null) {
    if (!isConfigureFenced(cur)) return undefined
    const transition = { from: cur.health, to: 'ok', reason: null }
    return { deviceId, health: 'ok', reason: null, transition, forceReport: true }
  }
  const reason = `${CONFIGURE_FAILED_PREFIX}${failure}`.slice(0, 255)
  // Recorded even when the device was failed already: the fence is a change of its own.
  const transition = { from: cur.health, to: 'failed', reason }
  return { deviceId, health: 'failed', reason, transition, forceReport: false }
}
