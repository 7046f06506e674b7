/**
 * Cheap re-checks of what reaches the conductor. The API has validated it already, but the
 * conductor is the last line before the database and also serves agents and other callers, so it
 * trusts nobody: each failure is an InvalidInputError whose `details.field` names the field.
 */
import type { ArqBindRequest } from '../rpc/conductor-rpc.js'
import { InvalidInputError } from '../domain/errors.js'
import {
  AttachType,
  DeviceType,
  canonicalJson,
  type DiscoveredDevice,
  type InventorySnapshot,
} from '../domain/inventory.js'
import { inventoryHash } from '../rpc/inventory-hash.js'
import { isUuidLike } from '../domain/ids.js'

/** Fails with InvalidInputError naming `field`. */
export function invalid(field: string, message: string): never {
  throw new InvalidInputError(`${field}: ${message}`, { details: { field } })
}

/** A string of 1..max characters (0..max with `allowEmpty`). */
export function checkString(
  value: unknown,
  field: string,
  { max = 255, allowEmpty = false } = {},
): string {
  if (typeof value !== 'string') invalid(field, 'must be a string')
  if (!allowEmpty && value.length === 0) invalid(field, 'must not be empty')
  if (value.length > max) invalid(field, `must be at most ${max} characters`)
  return value
}

export function checkUuid(value: unknown, field: string): string {
  if (typeof value !== 'string' || !isUuidLike(value)) invalid(field, 'must be a UUID')
  return value
}

export function checkPositiveInt(value: unknown, field: string): number {
  if (!Number.isSafeInteger(value) || (value as number) < 1)
    invalid(field, 'must be a positive integer')
  return value as number
}

export function checkOneOf<T extends string>(
  value: unknown,
  allowed: readonly T[],
  field: string,
): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    invalid(field, `must be one of ${allowed.join(', ')}`)
  }
  return value as T
}

export function checkArray(value: unknown, field: string, { nonEmpty = false } = {}): unknown[] {
  if (!Array.isArray(value)) invalid(field, 'must be an array')
  if (nonEmpty && value.length === 0) invalid(field, 'must not be empty')
  return value
}

/** A flat object whose values are all strings (a request group, an attach handle's info). */
export function checkStringMap(value: unknown, field: string): Record<string, string> {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    invalid(field, 'must be an object')
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'string') invalid(`${field}.${k}`, 'must be a string')
  }
  return value as Record<string, string>
}

function checkObjectOrNull(value: unknown, field: string): void {
  if (value !== null && (typeof value !== 'object' || Array.isArray(value)))
    invalid(field, 'must be an object or null')
}

/**
 * Checks an agent's snapshot: shapes, unique control paths and deployable names, and that the
 * hash really is the hash of the devices (the conductor skips writes on an equal hash).
 */
export function checkSnapshot(
  req: InventorySnapshot & {
    autoActivate: boolean
    resourceProvider?: { name: string; uuid?: string }
  },
): void {
  if (req === null || typeof req !== 'object') invalid('snapshot', 'must be an object')
  checkString(req.host, 'host')
  if (typeof req.autoActivate !== 'boolean') invalid('autoActivate', 'must be a boolean')
  if (req.resourceProvider !== undefined) {
    checkString(req.resourceProvider?.name, 'resourceProvider.name')
    if (req.resourceProvider.uuid !== undefined)
      checkUuid(req.resourceProvider.uuid, 'resourceProvider.uuid')
  }
  const devices = checkArray(req.devices, 'devices') as DiscoveredDevice[]
  const paths = new Set<string>()
  const names = new Set<string>()
  devices.forEach((device, i) => {
    const f = `devices[${i}]`
    if (device === null || typeof device !== 'object') invalid(f, 'must be an object')
    checkOneOf(device.type, Object.values(DeviceType), `${f}.type`)
    checkString(device.vendor, `${f}.vendor`, { allowEmpty: true })
    checkString(device.model, `${f}.model`, { allowEmpty: true })
    checkObjectOrNull(device.stdBoardInfo, `${f}.stdBoardInfo`)
    checkObjectOrNull(device.vendorBoardInfo, `${f}.vendorBoardInfo`)
    const cpType = checkOneOf(device.controlPath?.type, ['PCI', 'REMOTE'], `${f}.controlPath.type`)
    const info = checkStringMap(device.controlPath.info, `${f}.controlPath.info`)
    if (cpType === 'REMOTE') checkUuid(info.uuid, `${f}.controlPath.info.uuid`)
    const key =
      cpType === 'REMOTE'
        ? JSON.stringify([info.uuid])
        : JSON.stringify([info.domain, info.bus, info.device, info.function])
    if (paths.has(key)) invalid(`${f}.controlPath`, 'is reported twice')
    paths.add(key)
    if (device.health !== undefined) {
      if (device.health === null || typeof device.health !== 'object')
        invalid(`${f}.health`, 'must be an object')
      checkOneOf(device.health.state, ['ok', 'degraded', 'failed', 'unknown'], `${f}.health.state`)
      if (device.health.reason !== undefined)
        checkString(device.health.reason, `${f}.health.reason`)
    }
    checkArray(device.deployables, `${f}.deployables`).forEach((_, j) => {
      const d = device.deployables[j]!
      const g = `${f}.deployables[${j}]`
      checkString(d.name, `${g}.name`)
      if (names.has(d.name)) invalid(`${g}.name`, `${d.name} is reported twice`)
      names.add(d.name)
      if (d.uuid !== undefined) checkUuid(d.uuid, `${g}.uuid`)
      if (!Number.isSafeInteger(d.numAccelerators) || d.numAccelerators < 0) {
        invalid(`${g}.numAccelerators`, 'must be a non-negative integer')
      }
      checkString(d.driverName, `${g}.driverName`, { max: 100 })
      const keys = new Set<string>()
      checkArray(d.attributes, `${g}.attributes`).forEach((a, k) => {
        const attr = checkStringMap(a, `${g}.attributes[${k}]`)
        const key = checkString(attr.key, `${g}.attributes[${k}].key`)
        checkString(attr.value, `${g}.attributes[${k}].value`, { max: 65535, allowEmpty: true })
        if (keys.has(key)) invalid(`${g}.attributes[${k}].key`, `${key} is reported twice`)
        keys.add(key)
      })
      const handles = new Set<string>()
      checkArray(d.attachHandles, `${g}.attachHandles`).forEach((_, k) => {
        const h = d.attachHandles[k]!
        checkOneOf(h?.type, Object.values(AttachType), `${g}.attachHandles[${k}].type`)
        const handle = canonicalJson(checkStringMap(h.info, `${g}.attachHandles[${k}].info`))
        if (handles.has(handle)) invalid(`${g}.attachHandles[${k}].info`, 'is reported twice')
        handles.add(handle)
      })
    })
  })
  if (typeof req.hash !== 'string' || req.hash !== inventoryHash(devices)) {
    invalid('hash', 'is not the sha256 of the canonical JSON of devices')
  }
}

/** Nova's and the CLI's bindings, keyed by ARQ uuid. */
export function checkArqBindings(value: unknown): Record<string, ArqBindRequest> {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    invalid('bindings', 'must be an object keyed by ARQ uuid')
  const entries = Object.entries(value as Record<string, unknown>)
  if (entries.length === 0) invalid('bindings', 'must name at least one accelerator request')
  const out: Record<string, ArqBindRequest> = {}
  for (const [uuid, raw] of entries) {
    checkUuid(uuid, 'uuid')
    const b = (raw ?? {}) as Record<string, unknown>
    out[uuid] = {
      hostname: checkString(b.hostname, `${uuid}.hostname`),
      instanceUuid: checkUuid(b.instanceUuid, `${uuid}.instance_uuid`),
      ...(b.deviceRpUuid === undefined
        ? {}
        : { deviceRpUuid: checkUuid(b.deviceRpUuid, `${uuid}.device_rp_uuid`) }),
      ...(b.projectId === undefined
        ? {}
        : { projectId: checkString(b.projectId, `${uuid}.project_id`) }),
    }
  }
  return out
}

/** A non-empty list of uuids (the ARQs of an unbind or delete). */
export function checkUuidList(value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0) return [checkUuid(undefined, 'arqs')]
  return value.map((u, i) => checkUuid(u, `arqs[${i}]`))
}
