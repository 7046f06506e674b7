/**
 * Stable device identity (issue 18, part 1; docs/identity.md). A physical device keeps its uuid for
 * life on its host: the uuid comes from the host and the most stable identifier its driver knows
 * (a serial number where the hardware has one, else the control path), and the conductor
 * remembers every identity it has seen (`device_identities`), so a device that comes back after its
 * rows were deleted gets its uuid and its lifecycle back. Pure: no I/O.
 */
import { CYBORG_NAMESPACE, uuidV5 } from './ids.js'
import { canonicalJson, Lifecycle, type DiscoveredDevice } from './inventory/inventory.js'

/** The longest serial taken as an identity; a longer one is ignored (the control path is used). */
export const MAX_SERIAL_LENGTH = 200

/** What the conductor remembers of a device ever seen on a host (a `device_identities` row). */
export interface KnownIdentity {
  /** `serial:<serial>` or `path:<canonical control path>`. */
  identityKey: string
  deviceUuid: string
  /** The device's lifecycle (and reason) and status when its row was last written or deleted. */
  lifecycle: string
  lifecycleReason: string | null
  status: string
}

/** The parts of a stored device that matching needs. */
export interface IdentifiedRow {
  id: number
  uuid: string
  /** Canonical JSON of the control path (`cpid_info`). */
  key: string
}

/** How one reported device was matched. */
export interface DeviceMatch {
  /** The identity the device is kept under from now on. */
  identityKey: string
  /** The stored row it is (same identity, or same control path with no conflicting serial). */
  row?: IdentifiedRow
  /** The uuid of a device that has no row now: remembered, or derived. */
  uuid: string
  /** A remembered identity it comes back as (restore its lifecycle and status). */
  known?: KnownIdentity
  /** The identity row to rename to `identityKey` (a path-keyed identity that now has a serial). */
  rekeyFrom?: string
}

const isSerialKey = (key: string) => key.startsWith('serial:')
export const pathKey = (cpidInfo: string): string => `path:${cpidInfo}`

/** A usable serial: trimmed, non-empty, not a tool's placeholder, not too long. */
export function usableSerial(serial: string | undefined): string | undefined {
  const s = serial?.trim()
  if (s === undefined || s === '' || s.length > MAX_SERIAL_LENGTH) return undefined
  if (/^(n\/a|none|unknown|not specified|0+)$/i.test(s)) return undefined
  return s
}

/**
 * A device's identity key: `serial:<serial>` when the driver read a usable one (and the device is
 * not a registered remote accelerator), else `path:<canonical control path>`.
 */
export function identityKey(device: Pick<DiscoveredDevice, 'serial' | 'controlPath'>): string {
  const serial = device.controlPath.type === 'REMOTE' ? undefined : usableSerial(device.serial)
  return serial === undefined ? pathKey(canonicalJson(device.controlPath.info)) : `serial:${serial}`
}

/**
 * Identity keys of one report: a serial that two devices of the report share identifies neither
 * (a multi-function board reporting one serial per function), so both fall back to their paths.
 */
export function identityKeys(devices: readonly DiscoveredDevice[]): string[] {
  const keys = devices.map(identityKey)
  const count = new Map<string, number>()
  for (const k of keys) count.set(k, (count.get(k) ?? 0) + 1)
  return keys.map((k, i) =>
    (count.get(k) ?? 0) > 1 ? pathKey(canonicalJson(devices[i]!.controlPath.info)) : k,
  )
}

/** The uuid of a device first seen on `hostname` under `identityKey`. */
export function deviceUuid(hostname: string, key: string): string {
  return uuidV5(JSON.stringify(['device', hostname, key]), CYBORG_NAMESPACE)
}

/** The uuid of a new deployable of a device (its name is unique). */
export function deployableUuid(deviceUuidValue: string, name: string): string {
  return uuidV5(JSON.stringify(['deployable-of-device', deviceUuidValue, name]), CYBORG_NAMESPACE)
}

/** The uuid of a new attach handle of a deployable (its canonical info is unique there). */
export function attachHandleUuid(deployableUuidValue: string, info: string): string {
  return uuidV5(JSON.stringify(['handle', deployableUuidValue, info]), CYBORG_NAMESPACE)
}

/** The uuid of a new attribute of a deployable (its key is unique there). */
export function attributeUuid(deployableUuidValue: string, key: string): string {
  return uuidV5(JSON.stringify(['attribute', deployableUuidValue, key]), CYBORG_NAMESPACE)
}

/**
 * The lifecycle a returning device gets back: the one it had, except that an install cut short
 * (`ready`, `installing`) returns as `inactive`, for the operator to mark ready again.
 */
export function restoredLifecycle(known: KnownIdentity): {
  lifecycle: Lifecycle
  reason: string | null
} {
  switch (known.lifecycle) {
    case Lifecycle.active:
      return { lifecycle: Lifecycle.active, reason: null }
    case Lifecycle.error:
      return { lifecycle: Lifecycle.error, reason: known.lifecycleReason }
    default:
      return { lifecycle: Lifecycle.inactive, reason: null }
  }
}

/**
 * Matches a host's report to its stored rows and remembered identities:
 * 1. a device whose serial is a row's identity is that row, wherever it sits now (moved);
 * 2. else the row at the same control path, unless both have serials and they differ (then it is
 *    a different device: the row goes, the device is new); a path-keyed row that now reports a
 *    serial keeps its uuid and its identity is renamed; a serial-keyed row that reports none is
 *    still itself (no serial is not a different serial);
 * 3. else a remembered identity (the serial's, or, for a device that now has a serial, a
 *    path-keyed one at its control path), which gives its uuid and lifecycle back;
 * 4. else a new device, with the uuid derived from the host and its identity.
 * A row's identity is the remembered one with its uuid (none remembered: its control path).
 */
export function matchDevices(
  host: string,
  rows: readonly IdentifiedRow[],
  devices: readonly DiscoveredDevice[],
  known: readonly KnownIdentity[],
): DeviceMatch[] {
  const keys = identityKeys(devices)
  const knownByKey = new Map(known.map((k) => [k.identityKey, k]))
  const keyOfUuid = new Map(known.map((k) => [k.deviceUuid, k.identityKey]))
  const rowKey = (r: IdentifiedRow) => keyOfUuid.get(r.uuid) ?? pathKey(r.key)
  const rowsByIdentity = new Map(rows.map((r) => [rowKey(r), r]))
  const rowsByPath = new Map(rows.map((r) => [r.key, r]))
  const rowUuids = new Set(rows.map((r) => r.uuid))
  const taken = new Set<number>()
  const out: (DeviceMatch | undefined)[] = devices.map(() => undefined)

  // 1. serials first, so that a moved device claims its row before anything matches by path.
  keys.forEach((key, i) => {
    const row = isSerialKey(key) ? rowsByIdentity.get(key) : undefined
    if (row === undefined) return
    taken.add(row.id)
    out[i] = { identityKey: key, row, uuid: row.uuid }
  })
  return devices.map((device, i) => {
    const done = out[i]
    if (done) return done
    const key = keys[i]!
    const path = canonicalJson(device.controlPath.info)
    const row = rowsByPath.get(path)
    if (row !== undefined && !taken.has(row.id)) {
      const stored = rowKey(row)
      const differs = isSerialKey(key) && isSerialKey(stored) && stored !== key
      if (!differs) {
        taken.add(row.id)
        if (isSerialKey(key) && !isSerialKey(stored) && !knownByKey.has(key)) {
          return { identityKey: key, row, uuid: row.uuid, rekeyFrom: stored }
        }
        return { identityKey: stored, row, uuid: row.uuid }
      }
    }
    const remembered = knownByKey.get(key)
    if (remembered && !rowUuids.has(remembered.deviceUuid)) {
      return { identityKey: key, uuid: remembered.deviceUuid, known: remembered }
    }
    const byPath = isSerialKey(key) ? knownByKey.get(pathKey(path)) : undefined
    if (byPath && !rowUuids.has(byPath.deviceUuid) && !knownByKey.has(key)) {
      return {
        identityKey: key,
        uuid: byPath.deviceUuid,
        known: byPath,
        rekeyFrom: byPath.identityKey,
      }
    }
    const derived = deviceUuid(host, key)
    // Only if the identity was forgotten while its row lives on: never reuse a live uuid.
    if (rowUuids.has(derived)) return { identityKey: key, uuid: deviceUuid(host, `${key}#${path}`) }
    return { identityKey: key, uuid: derived }
  })
}
