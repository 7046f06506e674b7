/**
 * The pure half of report ingestion: what to add, update and remove so that a host's rows match
 * its agent's snapshot (cyborg-v2-facts §4.1). No I/O: src/conductor/report-ingest.ts loads the
 * rows (src/db/host-inventory.ts), diffs them here and applies the diff.
 *
 * Keys: devices by identity (src/domain/device-identity.ts: a serial, else the canonical control
 * path; docs/identity.md), deployables by name (within the device), attributes by key, attach
 * handles by canonical info. Every new row's uuid is derived here from its parent's uuid, so the
 * same physical device gets the same uuids after its rows were deleted. A vanished deployable that is still held (an ARQ holds it
 * or one of its handles, or it has a provider in Placement that may carry allocations) is never
 * removed here: it is marked `removal_pending`, its device is marked failed, and it goes once freed
 * (the conductor deletes the provider first, then a later diff removes the rows).
 */
import { InvalidInputError } from '../errors.js'
import { nextHealth } from '../health/report.js'
import { deployableRpUuid } from '../ids.js'
import {
  attachHandleUuid,
  attributeUuid,
  deployableUuid,
  matchDevices,
  pathKey,
  restoredLifecycle,
  type DeviceMatch,
  type KnownIdentity,
} from '../device-identity.js'
import {
  canonicalJson,
  type DiscoveredDeployable,
  type DiscoveredDevice,
  type ReportedHealth,
} from './inventory.js'

import {
  emptyDiff,
  type CurrentDeployable,
  type CurrentDevice,
  type DeployableFields,
  type DeviceFields,
  type InventoryDiff,
  type NewDeployable,
  type NewDevice,
} from './inventory-rows.js'

export { MISSING_REASON } from '../health/report.js'
export type {
  CurrentDeployable,
  CurrentDevice,
  CurrentHandle,
  DeployableFields,
  DeviceFields,
  InventoryDiff,
  NewDeployable,
  NewDevice,
} from './inventory-rows.js'

const jsonOrNull = (v: Record<string, unknown> | null) => (v === null ? null : canonicalJson(v))
const busy = (d: CurrentDeployable) => d.inUse || d.handles.some((h) => h.inUse)
/** Still held somewhere: cannot be deleted yet. */
const held = (d: CurrentDeployable) => busy(d) || d.inPlacement

/**
 * Computes the writes that turn `current` (one host's rows) into `devices` (its agent's snapshot).
 * `known` is what the host's `device_identities` hold: devices come back with their uuids and
 * lifecycles (src/domain/device-identity.ts).
 * @throws InvalidInputError when the snapshot repeats a control path, deployable name, attribute key
 * or handle info (where the database would refuse it).
 * `recoveryReports`: healthy reports in a row before a fenced device is offered again (damping).
 */
export function diffInventory(
  host: string,
  current: CurrentDevice[],
  devices: DiscoveredDevice[],
  recoveryReports = 1,
  known: readonly KnownIdentity[] = [],
): InventoryDiff {
  checkUnique(devices)
  const diff = emptyDiff(Math.max(1, recoveryReports))
  const matches = matchDevices(host, current, devices, known)
  const blocked = waiting(current, devices, matches)
  const byId = new Map(current.map((d) => [d.id, d]))
  const remember = rememberer(diff, known)
  const matched = new Set<number>()
  devices.forEach((device, i) => {
    const m = matches[i]!
    if (m.row) matched.add(m.row.id)
    if (blocked.has(i)) {
      diff.counts.pending++
      return
    }
    const key = canonicalJson(device.controlPath.info)
    remember(m)
    const cur = m.row && byId.get(m.row.id)
    if (!cur) {
      const deployables = device.deployables.map((d) => newDeployable(host, m.uuid, d))
      const restore = m.known && restoredState(m.known)
      diff.addDevices.push({
        uuid: m.uuid,
        ...(restore ? { restore } : {}),
        key,
        cpidType: device.controlPath.type,
        fields: deviceFields(device),
        deployables,
        ...(device.health === undefined ? {} : { health: device.health }),
      })
      diff.counts.added++
      return
    }
    const moved = cur.key !== key
    if (moved) diff.moveDevices.push({ id: cur.id, key, cpidType: device.controlPath.type })
    if (diffDevice(diff, host, cur, device) || moved) diff.counts.updated++
  })
  for (const cur of current) {
    if (matched.has(cur.id)) continue
    remember({ identityKey: pathKey(cur.key), uuid: cur.uuid, row: cur })
    if (cur.deployables.some(held)) {
      const before = writeCount(diff)
      for (const dep of cur.deployables) vanished(diff, dep)
      markMissing(diff, cur, true)
      if (writeCount(diff) > before) diff.counts.updated++
    } else {
      for (const dep of cur.deployables) removeDeployable(diff, dep)
      diff.removeDevices.push(cur.id)
      diff.counts.removed++
    }
  }
  return diff
}

/** The lifecycle and status a remembered device comes back with. */
function restoredState(k: KnownIdentity): NonNullable<NewDevice['restore']> {
  const { lifecycle, reason } = restoredLifecycle(k)
  return { lifecycle, lifecycleReason: reason, status: k.status }
}

/**
 * Queues the `device_identities` writes of a matched device: an insert when its uuid has no
 * identity yet (and the key is free), a rename when a path-keyed identity now has a serial.
 */
function rememberer(diff: InventoryDiff, known: readonly KnownIdentity[]) {
  const keys = new Set(known.map((k) => k.identityKey))
  const uuids = new Set(known.map((k) => k.deviceUuid))
  return (m: Pick<DeviceMatch, 'identityKey' | 'uuid' | 'rekeyFrom' | 'row'>): void => {
    const { identityKey, uuid: deviceUuid } = m
    if (!uuids.has(deviceUuid)) {
      if (keys.has(identityKey)) return // held by a forgotten device's identity: leave it be
      keys.add(identityKey)
      uuids.add(deviceUuid)
      diff.identities.push({ identityKey, deviceUuid, insert: true })
    } else if (m.rekeyFrom !== undefined) {
      keys.add(identityKey)
      diff.identities.push({ identityKey, deviceUuid, insert: false, rekeyFrom: m.rekeyFrom })
    }
  }
}

/**
 * Reported devices that must wait: a held row of another device stays where it is (its control
 * path, or one of its held deployables' names, which the database keeps unique), so the device
 * cannot be written there until that row is freed. A waiting device that has a row keeps it as it
 * is, which may make others wait in turn. Counted pending: the report is applied again later.
 */
function waiting(
  current: readonly CurrentDevice[],
  devices: readonly DiscoveredDevice[],
  matches: readonly DeviceMatch[],
): Set<number> {
  const reported = new Map<number, Set<string>>()
  matches.forEach((m, i) => {
    if (m.row) reported.set(m.row.id, new Set(devices[i]!.deployables.map((d) => d.name)))
  })
  const pathOwner = new Map<string, number>()
  const nameOwner = new Map<string, number>()
  for (const cur of current) {
    const names = reported.get(cur.id)
    if (names === undefined && cur.deployables.some(held)) pathOwner.set(cur.key, cur.id)
    for (const dep of cur.deployables) {
      if (held(dep) && !names?.has(dep.name)) nameOwner.set(dep.name, cur.id)
    }
  }
  const blocked = new Set<number>()
  for (let changed = true; changed;) {
    changed = false
    devices.forEach((device, i) => {
      if (blocked.has(i)) return
      const own = matches[i]!.row?.id
      const inWay = (owner: number | undefined) => owner !== undefined && owner !== own
      const path = canonicalJson(device.controlPath.info)
      if (
        !inWay(pathOwner.get(path)) &&
        !device.deployables.some((d) => inWay(nameOwner.get(d.name)))
      )
        return
      blocked.add(i)
      changed = true
      const row = current.find((c) => c.id === own)
      if (row === undefined) return
      pathOwner.set(row.key, row.id)
      for (const dep of row.deployables) nameOwner.set(dep.name, row.id)
    })
  }
  return blocked
}

/** Adds the writes for one device present on both sides; true when anything changes. */
function diffDevice(
  diff: InventoryDiff,
  host: string,
  cur: CurrentDevice,
  device: DiscoveredDevice,
): boolean {
  const before = writeCount(diff)
  const set: Partial<DeviceFields> = {}
  const want = deviceFields(device)
  for (const k of ['type', 'vendor', 'model', 'stdBoardInfo', 'vendorBoardInfo'] as const) {
    if (cur[k] !== want[k]) Object.assign(set, { [k]: want[k] })
  }
  if (Object.keys(set).length > 0) diff.updateDevices.push({ id: cur.id, set })

  const byName = new Map(cur.deployables.map((d) => [d.name, d]))
  const names = new Set(device.deployables.map((d) => d.name))
  let missing = false
  for (const dep of device.deployables) {
    const old = byName.get(dep.name)
    if (old) missing = diffDeployable(diff, host, old, dep) || missing
    else diff.addDeployables.push({ ...newDeployable(host, cur.uuid, dep), deviceId: cur.id })
  }
  for (const old of cur.deployables) {
    if (names.has(old.name)) continue
    if (busy(old)) missing = true
    vanished(diff, old)
  }
  markMissing(diff, cur, missing, device.health)
  return writeCount(diff) > before
}

/** Adds the writes for one deployable present on both sides; true when an in-use handle vanished. */
function diffDeployable(
  diff: InventoryDiff,
  host: string,
  cur: CurrentDeployable,
  dep: DiscoveredDeployable,
): boolean {
  const want = newDeployable(host, cur.uuid, dep)
  const set: Partial<DeployableFields> = {}
  if (cur.numAccelerators !== want.numAccelerators) set.numAccelerators = want.numAccelerators
  if (cur.driverName !== want.driverName) set.driverName = want.driverName
  // A stored provider uuid is kept: one imported from OpenStack Cyborg (uuid3 of the name) is what
  // Nova's allocations and requests name (docs/migrate-from-openstack-cyborg.md). Only a missing one is set.
  if (cur.rpUuid === null) set.rpUuid = want.rpUuid
  if (Object.keys(set).length > 0) diff.updateDeployables.push({ id: cur.id, set })
  if (cur.removalPending) diff.clearRemovalPending.push(cur.id)

  const attrs = new Map(cur.attributes.map((a) => [a.key, a]))
  for (const { key, value } of want.attributes) {
    const old = attrs.get(key)
    if (!old)
      diff.addAttributes.push({
        deployableId: cur.id,
        key,
        value,
        uuid: attributeUuid(cur.uuid, key),
      })
    else if (old.value !== value) diff.updateAttributes.push({ id: old.id, value })
    attrs.delete(key)
  }
  for (const gone of attrs.values()) diff.removeAttributes.push(gone.id)

  let missing = false
  const handles = new Map(cur.handles.map((h) => [h.info, h]))
  for (const { type, info } of want.handles) {
    const old = handles.get(info)
    if (!old)
      diff.addHandles.push({
        deployableId: cur.id,
        type,
        info,
        uuid: attachHandleUuid(cur.uuid, info),
      })
    else if (old.type !== type) diff.updateHandles.push({ id: old.id, type })
    handles.delete(info)
  }
  for (const gone of handles.values()) {
    if (gone.inUse) missing = true
    else diff.removeHandles.push(gone.id)
  }
  return missing
}

/** Applies nextHealth (../health/report.ts) to one device; true when the row changes. */
function markMissing(
  diff: InventoryDiff,
  cur: CurrentDevice,
  missing: boolean,
  reported?: ReportedHealth,
): boolean {
  const { set, transition, recovering } = nextHealth(cur, missing, reported, diff.recoveryReports)
  if (recovering) diff.recovering++
  if (transition) diff.healthChanges.push({ deviceId: cur.id, ...transition })
  if (!set) return false
  const existing = diff.updateDevices.find((u) => u.id === cur.id)
  if (existing) Object.assign(existing.set, set)
  else diff.updateDevices.push({ id: cur.id, set })
  return true
}

/** A deployable missing from the report: removed when nothing holds it, else (still) pending removal. */
function vanished(diff: InventoryDiff, dep: CurrentDeployable): void {
  if (!held(dep)) return removeDeployable(diff, dep)
  diff.counts.pending++
  if (!dep.removalPending) diff.markRemovalPending.push(dep.id)
}

function removeDeployable(diff: InventoryDiff, dep: CurrentDeployable): void {
  diff.removeAttributes.push(...dep.attributes.map((a) => a.id))
  diff.removeHandles.push(...dep.handles.map((h) => h.id))
  diff.removeDeployables.push(dep.id)
}

function deviceFields(d: DiscoveredDevice): DeviceFields {
  return {
    type: d.type,
    vendor: d.vendor,
    model: d.model,
    stdBoardInfo: jsonOrNull(d.stdBoardInfo),
    vendorBoardInfo: jsonOrNull(d.vendorBoardInfo),
  }
}

/** A deployable to insert; `deviceUuid` is its device's (the parent of its derived uuid). */
function newDeployable(host: string, deviceUuid: string, d: DiscoveredDeployable): NewDeployable {
  // A remote accelerator keeps the uuid it was registered with (the snapshot's hint).
  const uuid = d.uuid ?? deployableUuid(deviceUuid, d.name)
  return {
    name: d.name,
    uuid,
    numAccelerators: d.numAccelerators,
    driverName: d.driverName,
    rpUuid: deployableRpUuid(host, d.name),
    attributes: d.attributes.map(({ key, value }) => ({
      key,
      value,
      uuid: attributeUuid(uuid, key),
    })),
    handles: d.attachHandles.map((h) => {
      const info = canonicalJson(h.info)
      return { type: h.type, info, uuid: attachHandleUuid(uuid, info) }
    }),
  }
}

function writeCount(diff: InventoryDiff): number {
  let n = 0
  for (const v of Object.values(diff)) if (Array.isArray(v)) n += v.length
  return n
}

function checkUnique(devices: DiscoveredDevice[]): void {
  const dup = (what: string, field: string, value: string) =>
    new InvalidInputError(`inventory snapshot repeats ${what} ${value}`, {
      details: { field, value },
    })
  const keys = new Set<string>()
  const names = new Set<string>()
  for (const device of devices) {
    const key = canonicalJson(device.controlPath.info)
    if (keys.has(key)) throw dup('control path', 'controlPath', key)
    keys.add(key)
    for (const dep of device.deployables) {
      if (names.has(dep.name)) throw dup('deployable name', 'deployables.name', dep.name)
      names.add(dep.name)
      const attrKeys = new Set<string>()
      for (const a of dep.attributes) {
        if (attrKeys.has(a.key))
          throw dup('attribute key', 'attributes.key', `${dep.name}/${a.key}`)
        attrKeys.add(a.key)
      }
      const infos = new Set<string>()
      for (const h of dep.attachHandles) {
        const info = canonicalJson(h.info)
        if (infos.has(info)) throw dup('attach handle', 'attachHandles.info', info)
        infos.add(info)
      }
    }
  }
}
