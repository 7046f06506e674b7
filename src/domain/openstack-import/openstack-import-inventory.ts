/**
 * The inventory half of the import plan (openstack-import.ts): OpenStack Cyborg's devices with their
 * control paths, deployables, attributes and attach handles, with their uuids. A device's control
 * path and its handles' PCI fields are written in the form our drivers report (canonical JSON,
 * zero-padded lower-case hex), so the first agent report after the import finds the same rows
 * instead of adding new ones (docs/identity.md); the provider uuid is kept as it is.
 */
import { pathKey } from '../device-identity.js'
import {
  AttachType,
  canonicalJson,
  DeviceStatus,
  DeviceType,
  type PciAddress,
} from '../inventory/inventory.js'
import type { OsDeployable } from './openstack-cyborg.js'
import {
  deviceStateProblem,
  MAPPED_DEVICE_TYPES,
  noteMappedTypes,
} from './openstack-import-device-state.js'
import { osTimestamp, type PlanState } from './openstack-import-plan.js'

/** Device types an imported device may have: ours but REMOTE, and those written as one of ours. */
const DEVICE_TYPES: readonly string[] = [
  ...Object.values(DeviceType).filter((t) => t !== DeviceType.REMOTE),
  ...Object.keys(MAPPED_DEVICE_TYPES),
]
const ATTACH_TYPES: readonly string[] = Object.values(AttachType)
const STATUSES: readonly string[] = Object.values(DeviceStatus)

/** Hex digits of each PCI field as our drivers write them (src/drivers/pci/pci-sysfs.ts). */
const PCI_WIDTH: Readonly<Record<keyof PciAddress, number>> = {
  domain: 4,
  bus: 2,
  device: 2,
  function: 1,
}

/** A JSON object whose values are strings (numbers taken as their text); undefined otherwise. */
export function parseInfo(text: string): Record<string, string> | undefined {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(value)) {
    if (typeof v === 'string') out[k] = v
    else if (typeof v === 'number') out[k] = String(v)
    else return undefined
  }
  return out
}

/**
 * `info` with its PCI fields (domain, bus, device, function) in our drivers' form: lower-case hex,
 * zero-padded (OpenStack Cyborg's fake driver writes `"device": "0"`, ours and lspci `"00"`).
 * Fields that are not hex are left as they are.
 */
export function normalizePciFields(info: Record<string, string>): Record<string, string> {
  const out = { ...info }
  for (const [field, width] of Object.entries(PCI_WIDTH)) {
    const v = out[field]?.trim()
    if (v === undefined || !/^(0x)?[0-9a-f]+$/i.test(v)) continue
    out[field] = parseInt(v.replace(/^0x/i, ''), 16).toString(16).padStart(width, '0')
  }
  return out
}

/** A control path's info as our canonical PCI address; undefined when it is not one. */
export function pciControlPath(text: string): string | undefined {
  const info = parseInfo(text)
  if (!info) return undefined
  const fields = Object.keys(PCI_WIDTH) as (keyof PciAddress)[]
  if (!fields.every((f) => info[f] !== undefined)) return undefined
  const n = normalizePciFields(info)
  if (!fields.every((f) => /^[0-9a-f]+$/.test(n[f]!))) return undefined
  return canonicalJson(Object.fromEntries(fields.map((f) => [f, n[f]!])))
}

export function planInventory(state: PlanState): void {
  planDevices(state)
  planDeployables(state)
  planAttributes(state)
  planHandles(state)
}

function planDevices(state: PlanState): void {
  const { snapshot, target, plan, now } = state
  const cpids = new Map<number, typeof snapshot.controlPaths>()
  for (const c of snapshot.controlPaths)
    cpids.set(c.deviceId, [...(cpids.get(c.deviceId) ?? []), c])
  const deviceIds = new Set(snapshot.devices.map((d) => d.id))
  for (const c of snapshot.controlPaths) {
    if (!deviceIds.has(c.deviceId))
      state.skip('controlpath_ids', c.uuid, `its device (id ${c.deviceId}) does not exist`)
  }
  const seen = new Map<string, string>()
  const sourceTypes = new Map<string, string>()
  for (const d of snapshot.devices) {
    const paths = cpids.get(d.id) ?? []
    const [first, ...extra] = paths
    if (state.present('devices', d.uuid, target.devices)) {
      state.devices.set(d.id, d.uuid)
      for (const c of paths)
        plan.skipped.push({
          table: 'controlpath_ids',
          uuid: c.uuid,
          reason: 'its device is in the target already',
          present: true,
        })
      continue
    }
    const status = snapshot.revision.deviceStatus ? (d.status ?? '') : DeviceStatus.enabled
    const cpidInfo = first && first.cpidType === 'PCI' ? pciControlPath(first.cpidInfo) : undefined
    const key = `${d.hostname}\n${cpidInfo}`
    const stateProblem = deviceStateProblem(d.deviceState)
    const reason = !DEVICE_TYPES.includes(d.type)
      ? `device type ${d.type} is not one we know (${DEVICE_TYPES.join(', ')})`
      : !first
        ? 'it has no control path (OpenStack Cyborg leaves such a device out of its reports too)'
        : first.cpidType !== 'PCI'
          ? `control path type ${first.cpidType} is not supported (PCI only)`
          : cpidInfo === undefined
            ? `its control path ${first.cpidInfo} is not a PCI address`
            : !STATUSES.includes(status)
              ? `status ${status} is not one of ${STATUSES.join(', ')}`
              : stateProblem !== undefined
                ? stateProblem
                : seen.has(key)
                  ? `its control path ${cpidInfo} on host ${d.hostname} is also device ${seen.get(key)}'s`
                  : target.deviceKeys.has(key)
                    ? `its control path ${cpidInfo} on host ${d.hostname} is device ${target.deviceKeys.get(key)}'s in the target`
                    : undefined
    if (reason !== undefined) {
      state.skip('devices', d.uuid, reason)
      for (const c of paths)
        state.skip('controlpath_ids', c.uuid, `its device ${d.uuid} is not brought over`)
      continue
    }
    seen.set(key, d.uuid)
    state.devices.set(d.id, d.uuid)
    sourceTypes.set(d.uuid, d.type)
    plan.devices.push({
      uuid: d.uuid,
      type: MAPPED_DEVICE_TYPES[d.type] ?? d.type,
      vendor: d.vendor,
      model: d.model,
      stdBoardInfo: d.stdBoardInfo,
      vendorBoardInfo: d.vendorBoardInfo,
      hostname: d.hostname,
      status,
      cpidType: 'PCI',
      cpidInfo: cpidInfo!,
      identityKey: pathKey(cpidInfo!),
      ...(snapshot.revision.deviceState ? { deviceState: d.deviceState ?? null } : {}),
      createdAt: osTimestamp(d.createdAt, now),
      updatedAt: d.updatedAt === null ? null : osTimestamp(d.updatedAt, now),
    })
    for (const c of extra) {
      state.skip(
        'controlpath_ids',
        c.uuid,
        `device ${d.uuid} has more than one control path; the first (${first!.uuid}) is kept`,
      )
    }
  }
  noteMappedTypes(plan, sourceTypes)
}

/** Why a deployable's parent device is not available. */
function missingParent(kind: string, id: number, uuidOf: (id: number) => string | undefined) {
  const uuid = uuidOf(id)
  return uuid === undefined
    ? `its ${kind} (id ${id}) does not exist`
    : `its ${kind} ${uuid} is not brought over`
}

function planDeployables(state: PlanState): void {
  const { snapshot, target, plan, now } = state
  const deviceUuid = (id: number) => snapshot.devices.find((d) => d.id === id)?.uuid
  const names = new Map<string, string>()
  const rps = new Map<string, string>()
  const planned: [OsDeployable, number][] = []
  for (const dep of snapshot.deployables) {
    const device = state.devices.get(dep.deviceId)
    if (device !== undefined && state.present('deployables', dep.uuid, target.deployables)) {
      state.deployables.set(dep.id, dep.uuid)
      continue
    }
    const reason =
      device === undefined
        ? missingParent('device', dep.deviceId, deviceUuid)
        : names.has(dep.name)
          ? `its name ${dep.name} is also deployable ${names.get(dep.name)}'s (names must be unique)`
          : target.deployableNames.has(dep.name)
            ? `its name ${dep.name} is deployable ${target.deployableNames.get(dep.name)}'s in the target`
            : dep.rpUuid !== null && rps.has(dep.rpUuid)
              ? `its provider uuid ${dep.rpUuid} is also deployable ${rps.get(dep.rpUuid)}'s`
              : dep.rpUuid !== null && target.rpUuids.has(dep.rpUuid)
                ? `its provider uuid ${dep.rpUuid} is deployable ${target.rpUuids.get(dep.rpUuid)}'s in the target`
                : undefined
    if (reason !== undefined) {
      state.skip('deployables', dep.uuid, reason)
      continue
    }
    names.set(dep.name, dep.uuid)
    if (dep.rpUuid !== null) rps.set(dep.rpUuid, dep.uuid)
    else
      plan.notes.push(`deployable ${dep.uuid} has no provider uuid: the first report gives it ours`)
    state.deployables.set(dep.id, dep.uuid)
    planned.push([dep, plan.deployables.length])
    plan.deployables.push({
      uuid: dep.uuid,
      deviceUuid: device!,
      parentUuid: null,
      rootUuid: null,
      name: dep.name,
      numAccelerators: dep.numAccelerators,
      rpUuid: dep.rpUuid,
      driverName: dep.driverName,
      bitstreamId: dep.bitstreamId,
      createdAt: osTimestamp(dep.createdAt, now),
      updatedAt: dep.updatedAt === null ? null : osTimestamp(dep.updatedAt, now),
    })
  }
  // Parents and roots once every deployable is known (a parent may come later in id order).
  for (const [dep, i] of planned) {
    const row = plan.deployables[i]!
    for (const [field, id] of [
      ['parentUuid', dep.parentId],
      ['rootUuid', dep.rootId],
    ] as const) {
      if (id === null) continue
      const uuid = state.deployables.get(id)
      if (uuid !== undefined) row[field] = uuid
      else
        plan.notes.push(
          `deployable ${dep.uuid}: its ${field === 'parentUuid' ? 'parent' : 'root'} (id ${id}) is not brought over; left empty`,
        )
    }
  }
}

function planAttributes(state: PlanState): void {
  const { snapshot, target, plan, now } = state
  const depUuid = (id: number) => snapshot.deployables.find((d) => d.id === id)?.uuid
  const seen = new Map<string, string>()
  for (const a of snapshot.attributes) {
    const dep = state.deployables.get(a.deployableId)
    if (dep !== undefined && state.present('attributes', a.uuid, target.attributes)) continue
    const key = `${dep}\n${a.key}`
    const reason =
      dep === undefined
        ? missingParent('deployable', a.deployableId, depUuid)
        : a.key.length > 255
          ? `its key is longer than 255 characters`
          : seen.has(key)
            ? `key ${a.key} repeats on deployable ${dep} (attribute ${seen.get(key)} has it)`
            : target.attributeKeys.has(key)
              ? `deployable ${dep} has key ${a.key} in the target already`
              : undefined
    if (reason !== undefined) {
      state.skip('attributes', a.uuid, reason)
      continue
    }
    seen.set(key, a.uuid)
    plan.attributes.push({
      uuid: a.uuid,
      deployableUuid: dep!,
      key: a.key,
      value: a.value,
      createdAt: osTimestamp(a.createdAt, now),
      updatedAt: a.updatedAt === null ? null : osTimestamp(a.updatedAt, now),
    })
  }
}

function planHandles(state: PlanState): void {
  const { snapshot, target, plan, now } = state
  const depUuid = (id: number) => snapshot.deployables.find((d) => d.id === id)?.uuid
  const seen = new Map<string, string>()
  const rewritten: string[] = []
  for (const h of snapshot.attachHandles) {
    const dep = state.deployables.get(h.deployableId)
    if (dep !== undefined && state.present('attach_handles', h.uuid, target.attachHandles)) {
      state.handles.set(h.id, { uuid: h.uuid, deployableUuid: dep })
      continue
    }
    const info = parseInfo(h.attachInfo)
    const normalized = info && canonicalJson(normalizePciFields(info))
    const key = `${dep}\n${normalized}`
    const reason =
      dep === undefined
        ? missingParent('deployable', h.deployableId, depUuid)
        : !ATTACH_TYPES.includes(h.attachType)
          ? `attach type ${h.attachType} is not supported (${ATTACH_TYPES.join(', ')})`
          : normalized === undefined
            ? `its attach info ${h.attachInfo} is not a JSON object of strings`
            : seen.has(key)
              ? `its attach info ${normalized} repeats on deployable ${dep} (handle ${seen.get(key)} has it)`
              : target.handleInfos.has(key)
                ? `deployable ${dep} has a handle with attach info ${normalized} in the target already`
                : undefined
    if (reason !== undefined) {
      state.skip('attach_handles', h.uuid, reason)
      continue
    }
    seen.set(key, h.uuid)
    if (normalized !== canonicalJson(info))
      rewritten.push(`${h.uuid} (${h.attachInfo} → ${normalized})`)
    state.handles.set(h.id, { uuid: h.uuid, deployableUuid: dep! })
    plan.attachHandles.push({
      uuid: h.uuid,
      deployableUuid: dep!,
      attachType: h.attachType,
      attachInfo: normalized!,
      inUse: h.inUse,
      createdAt: osTimestamp(h.createdAt, now),
      updatedAt: h.updatedAt === null ? null : osTimestamp(h.updatedAt, now),
    })
  }
  if (rewritten.length > 0) {
    plan.notes.push(
      `${rewritten.length} attach handle(s) written with PCI fields in our drivers' form (the same address), e.g. ${rewritten[0]}`,
    )
  }
}
