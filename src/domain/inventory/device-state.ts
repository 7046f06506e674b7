/**
 * `device_state`, OpenStack Cyborg 17.0.0's per-device state (cyborg/common/constants.py
 * DEVICE_STATES, alembic b47c8f2d1e3a), derived here from what we track per unit and per device:
 * the clean-before-reuse fence of each attach handle (docs/cleaning.md), its allocation, and the
 * device's health and lifecycle (docs/health.md). Shown on devices from microversion 2.9
 * (docs/compat-2026-2.md); upstream stores it but shows it at no microversion.
 */
import type { Health, Lifecycle } from './inventory.js'

export const DeviceState = {
  available: 'available',
  allocated: 'allocated',
  pending_cleaning: 'pending_cleaning',
  cleaning: 'cleaning',
  error: 'error',
} as const
export type DeviceState = (typeof DeviceState)[keyof typeof DeviceState]

/** A device's attach handles, counted by what holds them (src/db/reads/device-reads.ts). */
export interface UnitCounts {
  /** `in_use` with no clean pending or failed: bound to a request, attached (v1), or fenced by a program or configure. */
  held: number
  /** Released, clean pending, the agent not asked yet (`clean_attempt_at` null). */
  cleanWaiting: number
  /** Released, clean pending, the agent asked (it runs, or will be asked again: docs/cleaning.md). */
  cleanAsked: number
  /** The clean or its verify failed: out of service until a clean passes or an operator overrides. */
  cleanFailed: number
}

export const NO_UNITS: UnitCounts = { held: 0, cleanWaiting: 0, cleanAsked: 0, cleanFailed: 0 }

/**
 * The state of the whole device, the most urgent first: `error` when it cannot serve until an
 * operator acts (health `failed`, lifecycle `error`, or a unit whose clean failed); `cleaning` when a
 * unit's clean was asked; `pending_cleaning` when one waits for its ask; `allocated` when a unit is
 * held (upstream's own rule for its backfill: an attach handle in use); else `available`.
 * Health `degraded` or `unknown` (a silent agent) change nothing: the units are as recorded.
 */
export function deviceStateOf(
  device: { health: Health; lifecycle: Lifecycle },
  units: UnitCounts,
): DeviceState {
  if (device.health === 'failed' || device.lifecycle === 'error' || units.cleanFailed > 0)
    return DeviceState.error
  if (units.cleanAsked > 0) return DeviceState.cleaning
  if (units.cleanWaiting > 0) return DeviceState.pending_cleaning
  if (units.held > 0) return DeviceState.allocated
  return DeviceState.available
}
