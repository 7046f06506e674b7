/**
 * Re-checks of what reaches the conductor. The API has validated it already, but the conductor is
 * the last line before the database and also serves agents and other callers, so it trusts nobody.
 * The payloads are checked by the TypeBox schemas of src/rpc/conductor-payloads.ts, compiled once
 * here; what a schema cannot say is checked after them, below. Each failure is an InvalidInputError
 * `<field>: <problem>` whose `details.field` names the field (src/rpc/payload-check.ts).
 */
import type { ArqBindRequest } from '../rpc/conductor-rpc.js'
import {
  canonicalJson,
  type DiscoveredDevice,
  type InventorySnapshot,
} from '../domain/inventory/inventory.js'
import { inventoryHash } from '../rpc/inventory-hash.js'
import { compilePayload, invalid } from '../rpc/payload-check.js'
import { Uuid } from '../rpc/payload-types.js'
import * as P from '../rpc/conductor-payloads.js'
import { parseDeviceConfigChange } from '../domain/device-config.js'

export { invalid }

export const checkHeartbeat = compilePayload(P.HeartbeatRequest)
export const checkDeviceProfileCreate = compilePayload(P.DeviceProfileCreate)
export const checkUuidsRequest = compilePayload(P.UuidsRequest)
export const checkAttributeCreate = compilePayload(P.AttributeCreate)
export const checkUuidRequest = compilePayload(P.UuidRequest)
export const checkDeviceStatus = compilePayload(P.DeviceStatusRequest)
export const checkDeviceClean = compilePayload(P.DeviceCleanRequest)
export const checkDeployableProgram = compilePayload(P.DeployableProgramRequest)
const checkConfigurePayload = compilePayload(P.DeviceConfigureRequest)
/** `configureDevice`'s request, its change checked field by field. */
export const checkDeviceConfigure = (req: unknown) => {
  const checked = checkConfigurePayload(req)
  return { ...checked, change: parseDeviceConfigChange(checked.change) }
}
export const checkArqCreate = compilePayload(P.ArqCreate)
export const checkArqsOfInstance = compilePayload(P.ArqsOfInstance)
export const checkV1Detach = compilePayload(P.V1Detach)
export const checkHostRequest = compilePayload(P.HostRequest)
export const checkDriverRequest = compilePayload(P.DriverRequest)
export const checkDriverUpdate = compilePayload(P.DriverUpdate)
export const checkRemoteRegistration = compilePayload(P.RemoteRegistration)

const uuid = compilePayload(Uuid())
/** A uuid (any case), named `field`. */
export const checkUuid = (value: unknown, field: string): string => uuid(value, field)

const report = compilePayload(P.InventoryReport)

/**
 * Checks an agent's snapshot: its shape, then unique control paths (a REMOTE one by its uuid),
 * deployable names, attribute keys and attach handles, and that the hash really is the hash of
 * the devices (the conductor skips writes on an equal hash).
 */
export function checkSnapshot(
  req: InventorySnapshot & {
    autoActivate: boolean
    resourceProvider?: { name: string; uuid?: string }
  },
): void {
  const { devices } = report(req, 'snapshot')
  const paths = new Set<string>()
  const names = new Set<string>()
  devices.forEach((device, i) => {
    const f = `devices[${i}]`
    const { type, info } = device.controlPath
    if (type === 'REMOTE') checkUuid(info.uuid, `${f}.controlPath.info.uuid`)
    const key =
      type === 'REMOTE'
        ? JSON.stringify([info.uuid])
        : JSON.stringify([info.domain, info.bus, info.device, info.function])
    if (paths.has(key)) invalid(`${f}.controlPath`, 'is reported twice')
    paths.add(key)
    device.deployables.forEach((d, j) => {
      const g = `${f}.deployables[${j}]`
      if (names.has(d.name)) invalid(`${g}.name`, `${d.name} is reported twice`)
      names.add(d.name)
      const keys = new Set<string>()
      d.attributes.forEach(({ key }, k) => {
        if (keys.has(key)) invalid(`${g}.attributes[${k}].key`, `${key} is reported twice`)
        keys.add(key)
      })
      const handles = new Set<string>()
      d.attachHandles.forEach(({ info }, k) => {
        const handle = canonicalJson(info)
        if (handles.has(handle)) invalid(`${g}.attachHandles[${k}].info`, 'is reported twice')
        handles.add(handle)
      })
    })
  })
  if (typeof req.hash !== 'string' || req.hash !== inventoryHash(req.devices as DiscoveredDevice[]))
    invalid('hash', 'is not the sha256 of the canonical JSON of devices')
}

const bindings = compilePayload(P.ArqBindings)

/** Nova's and the CLI's bindings, keyed by ARQ uuid: at least one. */
export function checkArqBindings(value: unknown): Record<string, ArqBindRequest> {
  const checked = bindings(value, 'bindings')
  const out: Record<string, ArqBindRequest> = {}
  for (const [arq, b] of Object.entries(checked)) {
    out[arq] = {
      hostname: b.hostname,
      instanceUuid: b.instanceUuid,
      ...(b.deviceRpUuid === undefined ? {} : { deviceRpUuid: b.deviceRpUuid }),
      ...(b.projectId === undefined ? {} : { projectId: b.projectId }),
    }
  }
  if (Object.keys(out).length === 0)
    invalid('bindings', 'must name at least one accelerator request')
  return out
}

/** A bind's key (ConductorRpc 1.9), a uuid, lower-cased; undefined when the caller sent none. */
export const checkBindId = (value: unknown): string | undefined =>
  value === undefined ? undefined : checkUuid(value, 'bind_id').toLowerCase()

/** A delete's key (ConductorRpc 1.10), a uuid, lower-cased; undefined when the caller sent none. */
export const checkDeleteId = (value: unknown): string | undefined =>
  value === undefined ? undefined : checkUuid(value, 'delete_id').toLowerCase()

const arqUuids = compilePayload(P.ArqUuids)

/** A non-empty list of uuids (the ARQs of an unbind or delete), named `arqs`. */
export const checkUuidList = (value: unknown): string[] => arqUuids(value, 'arqs')
