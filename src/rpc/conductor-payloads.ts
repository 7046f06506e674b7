/**
 * The shapes of ConductorRpc's requests as TypeBox schemas, for the conductor's re-check of what
 * reaches it over the bus (src/conductor/validate.ts compiles them). Properties are listed in the
 * order they are checked, so the first failure is the one a reader expects. What a schema cannot
 * say (unique control paths, the inventory hash, …) the conductor checks after them.
 */
import { Type } from '@sinclair/typebox'
import { AttachType, DeviceStatus, DeviceType } from '../domain/inventory/inventory.js'
import { KEY, PROBLEM } from './payload-check.js'
import {
  NonNegativeInt,
  Nullable,
  ObjectOrNull,
  OneOf,
  PositiveInt,
  StringMap,
  Text,
  UUID_ANY_CASE,
  Uuid,
} from './payload-types.js'

const Deployable = Type.Object({
  name: Text(),
  uuid: Type.Optional(Uuid()),
  numAccelerators: NonNegativeInt(),
  driverName: Text({ max: 100 }),
  attributes: Type.Array(
    // Every value a string, `key` and `value` among them.
    Type.Object(
      { key: Text(), value: Text({ max: 65535, allowEmpty: true }) },
      { additionalProperties: Type.String() },
    ),
  ),
  attachHandles: Type.Array(
    Type.Object({ type: OneOf(Object.values(AttachType)), info: StringMap() }),
  ),
})

const Device = Type.Object({
  type: OneOf(Object.values(DeviceType)),
  vendor: Text({ allowEmpty: true }),
  model: Text({ allowEmpty: true }),
  stdBoardInfo: ObjectOrNull(),
  vendorBoardInfo: ObjectOrNull(),
  controlPath: Type.Object({ type: OneOf(['PCI', 'REMOTE']), info: StringMap() }),
  // The device's identity when usable (docs/identity.md); empty or over 200 characters: ignored.
  serial: Type.Optional(Text({ allowEmpty: true })),
  health: Type.Optional(
    Type.Object({
      state: OneOf(['ok', 'degraded', 'failed', 'unknown']),
      reason: Type.Optional(Text()),
    }),
  ),
  deployables: Type.Array(Deployable),
})

/** `reportInventory`: an agent's snapshot (the hash is checked against the devices afterwards). */
export const InventoryReport = Type.Object({
  host: Text(),
  autoActivate: Type.Boolean(),
  resourceProvider: Type.Optional(Type.Object({ name: Text(), uuid: Type.Optional(Uuid()) })),
  devices: Type.Array(Device),
})

/** `heartbeat`. */
export const HeartbeatRequest = Type.Object({
  host: Text(),
  binary: Text({ max: 64 }),
  version: Text({ max: 64, allowEmpty: true }),
  inventoryHash: Type.Optional(Text({ max: 64 })),
})

/** `createDeviceProfile` (the groups' contents are the domain's to judge). */
export const DeviceProfileCreate = Type.Object({
  uuid: Type.Optional(Uuid()),
  name: Text(),
  description: Nullable(Text({ max: 65535, allowEmpty: true })),
  groups: Type.Array(StringMap(), { minItems: 1 }),
})

/** `deleteDeviceProfiles`. */
export const UuidsRequest = Type.Object({ uuids: Type.Array(Uuid(), { minItems: 1 }) })

/** `createAttribute`. */
export const AttributeCreate = Type.Object({
  deployableId: PositiveInt(),
  key: Text(),
  value: Text({ max: 65535, allowEmpty: true }),
})

/** Every request that names one thing by uuid (delete an attribute or a webhook, v1 attach, …). */
export const UuidRequest = Type.Object({ uuid: Uuid() })

/** `setDeviceStatus`. */
export const DeviceStatusRequest = Type.Object({
  uuid: Uuid(),
  status: OneOf(Object.values(DeviceStatus)),
})

/** `cleanDevice`. */
export const DeviceCleanRequest = Type.Object({
  uuid: Uuid(),
  force: Type.Optional(Type.Boolean()),
  userId: Type.Optional(Nullable(Text())),
  projectId: Type.Optional(Nullable(Text())),
})

/** `programDeployable`. */
export const DeployableProgramRequest = Type.Object({
  uuid: Uuid(),
  imageUuid: Uuid('image_uuid'),
  userId: Type.Optional(Nullable(Text())),
  projectId: Type.Optional(Nullable(Text())),
})

/** `configureDevice`; the change is checked by parseDeviceConfigChange (src/domain/device-config.ts). */
export const DeviceConfigureRequest = Type.Object({
  uuid: Uuid(),
  change: Type.Unknown(),
  userId: Type.Optional(Nullable(Text())),
  projectId: Type.Optional(Nullable(Text())),
})

/** `createArqs`, fields named as in the v2 API. */
export const ArqCreate = Type.Object({
  deviceProfileName: Text({ field: 'device_profile_name' }),
  maxArqs: PositiveInt(),
  projectId: Nullable(Text(), 'project_id'),
  createId: Type.Optional(Uuid('create_id')),
})

/** `bindArqs`: bindings keyed by ARQ uuid, fields named as in Nova's PATCH. Non-empty: checked after. */
export const ArqBindings = Type.Record(
  Type.String({ pattern: UUID_ANY_CASE }),
  Type.Object({
    hostname: Text(),
    instanceUuid: Uuid('instance_uuid'),
    deviceRpUuid: Type.Optional(Uuid('device_rp_uuid')),
    projectId: Type.Optional(Text({ field: 'project_id' })),
  }),
  {
    additionalProperties: false,
    [PROBLEM]: 'must be an object keyed by ARQ uuid',
    [KEY]: { field: 'uuid', problem: 'must be a UUID' },
  },
)

/** The ARQs of `unbindArqs` and of `deleteArqs` by uuid: a non-empty list, checked as `arqs`. */
export const ArqUuids = Type.Array(Uuid(), { minItems: 1, [PROBLEM]: 'must be a UUID' })

/** `deleteArqs` by instance. */
export const ArqsOfInstance = Type.Object({
  instanceUuid: Uuid('instance'),
  projectId: Type.Optional(Text({ field: 'project_id' })),
})

/** v1 `detachAccelerator`; `projectId` holds it to that project's attachments ("": none). */
export const V1Detach = Type.Object({
  uuid: Uuid(),
  instanceUuid: Type.Optional(Uuid('instance_uuid')),
  projectId: Type.Optional(Text({ field: 'project_id', allowEmpty: true })),
})

/** `listAgentDrivers` and `discoverHosts`. */
export const HostRequest = Type.Object({ hostname: Type.Optional(Text()) })

/** `installDriver` and `uninstallDriver`. */
export const DriverRequest = Type.Object({
  driver: Text({ max: 64 }),
  hostname: Type.Optional(Text()),
  /** `uninstallDriver`: a non-admin caller's project; its 409 names only that project's requests. */
  projectId: Type.Optional(Text({ field: 'project_id', allowEmpty: true })),
})

/** `updateDriver` (at least one option: checked after). */
export const DriverUpdate = Type.Object({
  driver: Text({ max: 64 }),
  options: StringMap(),
  hostname: Type.Optional(Text()),
})

/** `registerRemoteAccelerator`. */
export const RemoteRegistration = Type.Object({ name: Text(), uuid: Type.Optional(Uuid()) })
