/**
 * Events (issue 16): what a state change tells the world, built here and written by the db layer
 * into the outbox (`events`) in the transaction of the change; the conductor's relay publishes
 * them. Every payload is a versioned object (docs/notifications.md lists each one and its fields):
 * `{ 'cyborg_object.name', 'cyborg_object.namespace': 'cyborg', 'cyborg_object.version',
 * 'cyborg_object.data' }`. A payload gains fields in a minor version and changes them in a major.
 */
import { newUuid } from './ids.js'

export type EventPriority = 'INFO' | 'ERROR'
export type EventResourceType = 'device' | 'deployable' | 'arq' | 'driver' | 'agent'

/** A versioned payload object, as receivers get it. */
export interface VersionedPayload {
  'cyborg_object.name': PayloadName
  'cyborg_object.namespace': 'cyborg'
  'cyborg_object.version': string
  'cyborg_object.data': Record<string, unknown>
}

/** The payload objects and their current versions. */
export const PAYLOAD_VERSIONS = {
  DevicePayload: '1.0',
  DeviceHealthPayload: '1.0',
  DeployablePayload: '1.1',
  ArqPayload: '1.0',
  DriverPayload: '1.0',
  AgentPayload: '1.0',
  DeviceCleanPayload: '1.0',
  DeviceConfigurePayload: '1.0',
} as const
export type PayloadName = keyof typeof PAYLOAD_VERSIONS

/** An event to write: an outbox row before it has its position. */
export interface NewEvent {
  /** Stable event id: receivers de-duplicate by it. */
  uuid: string
  /** `accelerator.<resource>.<action>` */
  eventType: string
  priority: EventPriority
  resourceType: EventResourceType
  /** The resource's uuid; an agent's is its host name, a driver's `<host>:<driver>`. */
  resourceUuid: string
  projectId: string | null
  payload: VersionedPayload
  /** When the change was made (formatTimestamp). */
  createdAt: string
}

/** An outbox row as read back. */
export interface StoredEvent {
  /** Position in the outbox (increasing). */
  id: number
  uuid: string
  eventType: string
  priority: EventPriority
  resourceType: string
  resourceUuid: string
  projectId: string | null
  payload: Record<string, unknown>
  createdAt: string
  sentAt: string | null
}

/** What an event says about a device (a `Device` is one). */
export interface DeviceFacts {
  uuid: string
  hostname: string
  type: string
  vendor: string
  model: string
  stdBoardInfo: string | null
  vendorBoardInfo: string | null
  status: string
  lifecycle: string
  lifecycleReason: string | null
  health: string
  healthReason: string | null
}

export type DeviceAction =
  'added' | 'ready' | 'active' | 'error' | 'removed' | 'enabled' | 'disabled'

/** What an event says about an accelerator request. */
export interface ArqFacts {
  uuid: string
  state: string
  /** Null for a v1 attachment (it has no device profile). */
  deviceProfileName: string | null
  deviceProfileGroupId: number
  projectId: string | null
  hostname: string | null
  deviceRpUuid: string | null
  instanceUuid: string | null
  attachHandle: { uuid: string; type: string; info: Record<string, unknown> } | null
}

export type ArqAction =
  'created' | 'bound' | 'bind_failed' | 'unbound' | 'unbind_failed' | 'deleted'

/** What an event says about a deployable. */
export interface DeployableFacts {
  uuid: string
  name: string
  hostname: string
  deviceUuid: string
  numAccelerators: number
  rpUuid: string | null
  driverName: string | null
  bitstreamId: string | null
}

/** What an event says about an agent's driver after an administrator changed it. */
export interface DriverFacts {
  hostname: string
  driver: string
  enabled: boolean
  options: Record<string, string>
}

export type DriverAction = 'installed' | 'uninstalled' | 'updated'

/** What an event says about an agent's lease. */
export interface AgentFacts {
  hostname: string
  binary: string
  /** The lease fence's reason (lease_lost); null once regained. */
  reason: string | null
  /** The devices fenced (lease_lost) or offered again (lease_regained). */
  devices: string[]
}

export type AgentAction = 'lease_lost' | 'lease_regained'

export const versioned = (name: PayloadName, data: Record<string, unknown>): VersionedPayload => ({
  'cyborg_object.name': name,
  'cyborg_object.namespace': 'cyborg',
  'cyborg_object.version': PAYLOAD_VERSIONS[name],
  'cyborg_object.data': data,
})

export const event = (
  resourceType: EventResourceType,
  action: string,
  resource: { uuid: string; projectId?: string | null },
  priority: EventPriority,
  payload: VersionedPayload,
  at: string,
): NewEvent => ({
  uuid: newUuid(),
  eventType: `accelerator.${resourceType}.${action}`,
  priority,
  resourceType,
  resourceUuid: resource.uuid,
  projectId: resource.projectId ?? null,
  payload,
  createdAt: at,
})

export const deviceData = (d: DeviceFacts) => ({
  uuid: d.uuid,
  hostname: d.hostname,
  type: d.type,
  vendor: d.vendor,
  model: d.model,
  std_board_info: d.stdBoardInfo,
  vendor_board_info: d.vendorBoardInfo,
  status: d.status,
  lifecycle: d.lifecycle,
  lifecycle_reason: d.lifecycleReason,
  health: d.health,
  health_reason: d.healthReason,
})

/** Health states in which a device is fenced: a change to one is an ERROR event. */
const FAILED_HEALTH = new Set(['failed', 'unknown'])

/** `accelerator.device.<action>`: the device as saved (for `removed`, as it was last). */
export function deviceEvent(action: DeviceAction, device: DeviceFacts, at: string): NewEvent {
  const priority = action === 'error' ? 'ERROR' : 'INFO'
  return event(
    'device',
    action,
    device,
    priority,
    versioned('DevicePayload', deviceData(device)),
    at,
  )
}

/** `accelerator.device.health_changed`: the device as saved, and its health before (`new` for a new device). */
export function deviceHealthEvent(device: DeviceFacts, previous: string, at: string): NewEvent {
  const priority = FAILED_HEALTH.has(device.health) ? 'ERROR' : 'INFO'
  const data = { ...deviceData(device), previous_health: previous }
  return event(
    'device',
    'health_changed',
    device,
    priority,
    versioned('DeviceHealthPayload', data),
    at,
  )
}

/** What a clean event says about the unit and its clean (docs/cleaning.md). */
export interface CleanFacts {
  handleUuid: string
  deployableUuid: string
  /** `cleaned`: method and result (`ok`, or `skipped` with clean = none); `clean_failed`: reason. */
  method: string | null
  result: string
  evidenceSha256: string | null
  reason: string | null
  /** The custody records: the allocation interval that ended, and the clean's own. */
  allocationRecordUuid: string | null
  cleanRecordUuid: string
}

/**
 * `accelerator.device.cleaned` (INFO), `.clean_failed` (ERROR) or `.clean_overridden` (INFO: an
 * operator put the unit back in service without a clean).
 */
export function deviceCleanEvent(
  action: 'cleaned' | 'clean_failed' | 'clean_overridden',
  device: DeviceFacts,
  clean: CleanFacts,
  at: string,
): NewEvent {
  const data = {
    ...deviceData(device),
    handle_uuid: clean.handleUuid,
    deployable_uuid: clean.deployableUuid,
    clean_method: clean.method,
    clean_result: clean.result,
    clean_evidence_sha256: clean.evidenceSha256,
    clean_reason: clean.reason,
    allocation_record_uuid: clean.allocationRecordUuid,
    clean_record_uuid: clean.cleanRecordUuid,
  }
  const priority = action === 'clean_failed' ? 'ERROR' : 'INFO'
  return event('device', action, device, priority, versioned('DeviceCleanPayload', data), at)
}

/** `accelerator.arq.<action>`; `reason` says why a bind or an unbind failed. */
export function arqEvent(
  action: ArqAction,
  arq: ArqFacts,
  at: string,
  reason: string | null = null,
): NewEvent {
  const priority = action === 'bind_failed' || action === 'unbind_failed' ? 'ERROR' : 'INFO'
  const data = {
    uuid: arq.uuid,
    state: arq.state,
    device_profile_name: arq.deviceProfileName,
    device_profile_group_id: arq.deviceProfileGroupId,
    project_id: arq.projectId,
    hostname: arq.hostname,
    device_rp_uuid: arq.deviceRpUuid,
    instance_uuid: arq.instanceUuid,
    attach_handle_uuid: arq.attachHandle?.uuid ?? null,
    attach_handle_type: arq.attachHandle?.type ?? null,
    attach_handle_info: arq.attachHandle?.info ?? null,
    reason,
  }
  return event('arq', action, arq, priority, versioned('ArqPayload', data), at)
}

/** Who programmed a deployable through the program API, with what, and how it ended. */
export interface ProgramFacts {
  operationUuid: string
  imageUuid: string
  userId: string | null
  projectId: string | null
  /** Why it failed; null when it worked. */
  reason: string | null
  /** The custody ledger's `program` record; null when the card was not touched. */
  custodyRecordUuid: string | null
}

/**
 * `accelerator.deployable.programmed` (INFO) or `.program_failed` (ERROR): the deployable as saved.
 * DeployablePayload 1.1 adds the program API's fields, null for a program made by a bind.
 */
export function deployableEvent(
  action: 'programmed' | 'program_failed',
  d: DeployableFacts,
  at: string,
  program?: ProgramFacts,
): NewEvent {
  const data = {
    uuid: d.uuid,
    name: d.name,
    hostname: d.hostname,
    device_uuid: d.deviceUuid,
    num_accelerators: d.numAccelerators,
    rp_uuid: d.rpUuid,
    driver_name: d.driverName,
    bitstream_id: d.bitstreamId,
    operation_uuid: program?.operationUuid ?? null,
    image_uuid: program?.imageUuid ?? null,
    user_id: program?.userId ?? null,
    project_id: program?.projectId ?? null,
    reason: program?.reason ?? null,
    custody_record_uuid: program?.custodyRecordUuid ?? null,
  }
  const priority = action === 'program_failed' ? 'ERROR' : 'INFO'
  return event('deployable', action, d, priority, versioned('DeployablePayload', data), at)
}

/** `accelerator.driver.<action>`: the driver's state on its agent after the change. */
export function driverEvent(action: DriverAction, d: DriverFacts, at: string): NewEvent {
  const data = { hostname: d.hostname, driver: d.driver, enabled: d.enabled, options: d.options }
  const resource = { uuid: `${d.hostname}:${d.driver}` }
  return event('driver', action, resource, 'INFO', versioned('DriverPayload', data), at)
}

/** `accelerator.agent.<action>`: an agent lost its lease (its devices fenced) or regained it. */
export function agentEvent(action: AgentAction, a: AgentFacts, at: string): NewEvent {
  const data = { hostname: a.hostname, binary: a.binary, reason: a.reason, devices: a.devices }
  const priority = action === 'lease_lost' ? 'ERROR' : 'INFO'
  const resource = { uuid: a.hostname }
  return event('agent', action, resource, priority, versioned('AgentPayload', data), at)
}
