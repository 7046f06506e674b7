/**
 * The rows of one host as report ingestion sees them (`Current*`, loaded by
 * src/db/host-inventory.ts), the rows it creates (`New*`), and the diff that turns the one into
 * the other (computed by src/domain/inventory/inventory-diff.ts, applied by src/db/host-inventory.ts).
 */
import type { HealthSet } from '../health/report.js'
import type { ReportedHealth } from './inventory.js'

export interface CurrentHandle {
  id: number
  type: string
  /** Canonical JSON (the `attach_info` column). */
  info: string
  /** in_use = 1, or held by an accelerator request. */
  inUse: boolean
}

export interface CurrentDeployable {
  id: number
  uuid: string
  name: string
  numAccelerators: number
  driverName: string | null
  rpUuid: string | null
  /** Named by an accelerator request (`accelerator_requests.deployable_id`). */
  inUse: boolean
  /** Has a resource provider in Placement (`placement_hash` is set). */
  inPlacement: boolean
  removalPending: boolean
  attributes: { id: number; key: string; value: string }[]
  handles: CurrentHandle[]
}

/** Device columns that a report can change. */
export interface DeviceFields {
  type: string
  vendor: string
  model: string
  /** Canonical JSON or null. */
  stdBoardInfo: string | null
  vendorBoardInfo: string | null
}

/** A device row of the host, with everything beneath it. */
export interface CurrentDevice extends DeviceFields {
  id: number
  uuid: string
  /** Canonical JSON of the control path (the `cpid_info` column). */
  key: string
  health: string
  lifecycleReason: string | null
  /** Why health is not ok (`health_reason`). */
  healthReason?: string | null
  /** Healthy reports in a row while fenced (`healthy_reports`; damping). */
  healthyReports?: number
  deployables: CurrentDeployable[]
}

export interface DeployableFields {
  numAccelerators: number
  driverName: string | null
  rpUuid: string
}

export interface NewDeployable extends DeployableFields {
  name: string
  /** The snapshot's uuid hint (a remote accelerator's registered uuid), else derived from the device's. */
  uuid: string
  attributes: { key: string; value: string; uuid: string }[]
  handles: { type: string; info: string; uuid: string }[]
}

export interface NewDevice {
  /** Remembered (a device coming back), else derived from the host and its identity. */
  uuid: string
  /** The lifecycle and status it comes back with; absent: a device never seen (inactive, enabled). */
  restore?: { lifecycle: string; lifecycleReason: string | null; status: string }
  key: string
  /** The control path's type (`cpid_type`): PCI, or REMOTE for a registered remote accelerator. */
  cpidType: string
  fields: DeviceFields
  deployables: NewDeployable[]
  /** What the driver reported of its health; absent means ok. */
  health?: ReportedHealth
}

/** Everything to write, grouped by table so that each group can go to the database in one statement. */
export interface InventoryDiff {
  addDevices: NewDevice[]
  updateDevices: { id: number; set: Partial<DeviceFields> & HealthSet }[]
  /** Devices found at another control path (same serial): their new `cpid_info` and `cpid_type`. */
  moveDevices: { id: number; key: string; cpidType: string }[]
  /**
   * `device_identities` writes: a new identity to insert (a device never seen, or a row that has
   * none), or a path-keyed identity renamed to the serial its device now reports.
   */
  identities: { identityKey: string; deviceUuid: string; insert: boolean; rekeyFrom?: string }[]
  addDeployables: (NewDeployable & { deviceId: number })[]
  updateDeployables: { id: number; set: Partial<DeployableFields> }[]
  addAttributes: { deployableId: number; key: string; value: string; uuid: string }[]
  updateAttributes: { id: number; value: string }[]
  addHandles: { deployableId: number; type: string; info: string; uuid: string }[]
  updateHandles: { id: number; type: string }[]
  /** Deployables that vanished but are still held, to mark `removal_pending`; and ones back again. */
  markRemovalPending: number[]
  clearRemovalPending: number[]
  /** Ids to delete; children of removed parents are listed too (delete attributes/handles first). */
  removeAttributes: number[]
  removeHandles: number[]
  removeDeployables: number[]
  removeDevices: number[]
  /**
   * Devices added, updated (any change beneath the device) and removed; deployables pending
   * removal, and reported devices that wait for a held row in their way (its control path or a
   * deployable name) to go.
   */
  counts: { added: number; updated: number; removed: number; pending: number }
  /** Changes of health state of existing devices, to record and log. */
  healthChanges: { deviceId: number; from: string; to: string; reason: string | null }[]
  /** Devices held fenced by damping: the report's hash must not be kept. */
  recovering: number
  /** `[conductor] health_recovery_reports` (≥ 1). */
  recoveryReports: number
}

/** A diff that writes nothing. */
export const emptyDiff = (recoveryReports: number): InventoryDiff => ({
  addDevices: [],
  updateDevices: [],
  moveDevices: [],
  identities: [],
  addDeployables: [],
  updateDeployables: [],
  addAttributes: [],
  updateAttributes: [],
  addHandles: [],
  updateHandles: [],
  markRemovalPending: [],
  clearRemovalPending: [],
  removeAttributes: [],
  removeHandles: [],
  removeDeployables: [],
  removeDevices: [],
  counts: { added: 0, updated: 0, removed: 0, pending: 0 },
  healthChanges: [],
  recovering: 0,
  recoveryReports,
})
