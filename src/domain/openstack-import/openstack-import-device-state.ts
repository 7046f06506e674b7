/**
 * What OpenStack Cyborg 17.0.0 (2026.2) adds to a device, in our terms
 * (docs/migrate-from-openstack-cyborg.md, "What 17.0.0 adds"): the device types MDEV and NVME, which
 * are not ours, and `devices.device_state`. Upstream's state is the whole device's; ours is each
 * unit's (docs/cleaning.md), so a device OpenStack Cyborg had not finished cleaning has its units
 * that no brought-over request holds written `cleaning` (pending: our conductor asks our agent to
 * clean them before anyone may claim them), and a device in `error` has them written failed, with
 * the device fenced as a failed clean fences it (health `failed`, reason `clean failed: …`), until
 * `cyborg device clean` succeeds or an operator forces it.
 */
import { CLEAN_FAILED_PREFIX } from '../health/report.js'
import { DeviceType } from '../inventory/inventory.js'
import { DEVICE_STATES } from './openstack-cyborg.js'
import type { ImportPlan } from './openstack-import-plan.js'

/**
 * OpenStack Cyborg's device types that are not ours, and the type they are brought over as: NVME
 * as SSD (what our nvme-ssd driver reports for the same controller), MDEV as PCI (the parent
 * function of mediated devices; our drivers report its class, e.g. GPU for an NVIDIA vGPU parent,
 * and the first report writes that type, src/domain/inventory/inventory-diff.ts).
 */
export const MAPPED_DEVICE_TYPES: Readonly<Record<string, string>> = {
  NVME: DeviceType.SSD,
  MDEV: DeviceType.PCI,
}

/** The health reason of a device OpenStack Cyborg left in `error`. */
export const IMPORTED_ERROR_REASON = `${CLEAN_FAILED_PREFIX}OpenStack Cyborg left the device in device_state error`

/** Why `deviceState` cannot be read; undefined when it can (null: upstream's backfill has not run). */
export function deviceStateProblem(deviceState: string | null | undefined): string | undefined {
  if (deviceState === undefined || deviceState === null) return undefined
  if ((DEVICE_STATES as readonly string[]).includes(deviceState)) return undefined
  return `device_state ${deviceState} is not one of ${DEVICE_STATES.join(', ')}`
}

/** Notes the devices whose type was mapped (planned with their source type in `sourceTypes`). */
export function noteMappedTypes(plan: ImportPlan, sourceTypes: Map<string, string>): void {
  for (const [from, to] of Object.entries(MAPPED_DEVICE_TYPES)) {
    const uuids = plan.devices.filter((d) => sourceTypes.get(d.uuid) === from).map((d) => d.uuid)
    if (uuids.length === 0) continue
    plan.notes.push(
      `${uuids.length} device(s) of OpenStack Cyborg's type ${from} written as ${to}, e.g. ${uuids[0]}` +
        (from === 'MDEV' ? ` (our agent's first report writes the type its driver reports)` : ''),
    )
  }
}

/**
 * Applies each planned device's `deviceState` to its units and health, once the requests are
 * planned (a unit a brought-over request holds stays that request's). Pure: changes `plan`.
 */
export function planDeviceStates(plan: ImportPlan): void {
  const held = new Set(plan.arqs.map((a) => a.handleUuid).filter((h) => h !== null))
  const deviceOf = new Map(plan.deployables.map((d) => [d.uuid, d.deviceUuid]))
  let unbackfilled = 0
  for (const device of plan.devices) {
    const state = device.deviceState
    if (state === null) unbackfilled++
    if (state !== 'pending_cleaning' && state !== 'cleaning' && state !== 'error') continue
    const clean = state === 'error' ? 'failed' : 'pending'
    const units = plan.attachHandles.filter(
      (h) => deviceOf.get(h.deployableUuid) === device.uuid && !held.has(h.uuid),
    )
    for (const h of units) {
      h.inUse = true
      h.cleanState = clean
    }
    if (state === 'error') {
      device.health = 'failed'
      device.healthReason = IMPORTED_ERROR_REASON
    }
    const written =
      clean === 'pending'
        ? 'cleaning (our agent cleans them before any claim)'
        : 'with a failed clean, the device fenced (cyborg device clean)'
    plan.notes.push(
      `device ${device.uuid} was ${state} in OpenStack Cyborg: ${units.length} unit(s) no request ` +
        `holds written ${written}`,
    )
  }
  if (unbackfilled > 0)
    plan.notes.push(
      `${unbackfilled} device(s) have no device_state (cyborg-dbsync online_data_migrations not run): ` +
        `read from their units, as its backfill would (allocated if one is in use, else available)`,
    )
}
