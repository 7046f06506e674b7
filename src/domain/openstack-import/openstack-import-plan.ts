/**
 * The shapes of an import plan (`cyborg db import-openstack`, openstack-import.ts): what the target
 * holds (`TargetIndex`), the rows to write (linked by uuid; the writer resolves ids), the rows left
 * out with their reasons, and the running state the per-table planners share.
 */
import type { OpenStackRevision, OpenStackSnapshot } from './openstack-cyborg.js'

/** OpenStack Cyborg's tables that are brought over, in the order they are planned. */
export const IMPORT_TABLES = [
  'devices',
  'controlpath_ids',
  'deployables',
  'attributes',
  'attach_handles',
  'device_profiles',
  'extended_accelerator_requests',
] as const
export type ImportTable = (typeof IMPORT_TABLES)[number]

/** A source row that is not brought over. */
export interface SkippedRow {
  table: ImportTable
  uuid: string
  reason: string
  /** The target has a row with this uuid already (`--merge`): nothing to bring, nothing wrong. */
  present?: boolean
}

/**
 * What the target database holds, as far as the plan must know: every uuid per table, and the
 * values our unique constraints cover. Keys joining two values use a newline.
 */
export interface TargetIndex {
  /** No device, deployable, device profile, request or remembered identity. */
  empty: boolean
  devices: Set<string>
  deployables: Set<string>
  attributes: Set<string>
  attachHandles: Set<string>
  deviceProfiles: Set<string>
  arqs: Set<string>
  /** `<hostname>\n<cpid_info>` → device uuid. */
  deviceKeys: Map<string, string>
  /** Deployable name → uuid. */
  deployableNames: Map<string, string>
  /** Provider uuid → deployable uuid. */
  rpUuids: Map<string, string>
  /** Device profile name → uuid. */
  profileNames: Map<string, string>
  /** `<deployable uuid>\n<key>`. */
  attributeKeys: Set<string>
  /** `<deployable uuid>\n<canonical attach info>`. */
  handleInfos: Set<string>
  /** Attach handle uuid → the uuid of the request holding it. */
  heldHandles: Map<string, string>
}

export function emptyTargetIndex(): TargetIndex {
  return {
    empty: true,
    devices: new Set(),
    deployables: new Set(),
    attributes: new Set(),
    attachHandles: new Set(),
    deviceProfiles: new Set(),
    arqs: new Set(),
    deviceKeys: new Map(),
    deployableNames: new Map(),
    rpUuids: new Map(),
    profileNames: new Map(),
    attributeKeys: new Set(),
    handleInfos: new Set(),
    heldHandles: new Map(),
  }
}

interface Stamped {
  uuid: string
  createdAt: string
  updatedAt: string | null
}

export interface PlannedDevice extends Stamped {
  type: string
  vendor: string
  model: string
  stdBoardInfo: string | null
  vendorBoardInfo: string | null
  hostname: string
  status: string
  cpidType: 'PCI'
  /** Canonical JSON of the control path, the form our drivers report. */
  cpidInfo: string
  /** The `device_identities` key it is remembered under: `path:<cpidInfo>`. */
  identityKey: string
  /** OpenStack Cyborg's `device_state` (17.0.0; null before its backfill); absent before. */
  deviceState?: string | null
  /** Set when the device comes fenced (`device_state` error); ok otherwise. */
  health?: 'failed'
  healthReason?: string
}

export interface PlannedDeployable extends Stamped {
  deviceUuid: string
  parentUuid: string | null
  rootUuid: string | null
  name: string
  numAccelerators: number
  /** OpenStack Cyborg's provider uuid, kept: Nova's allocations and requests name it. */
  rpUuid: string | null
  driverName: string | null
  bitstreamId: string | null
}

export interface PlannedAttribute extends Stamped {
  deployableUuid: string
  key: string
  value: string
}

export interface PlannedHandle extends Stamped {
  deployableUuid: string
  attachType: string
  /** Canonical JSON, PCI fields in our drivers' form. */
  attachInfo: string
  inUse: boolean
  /** Written cleaning (pending) or with a failed clean: its device was being cleaned, or in error. */
  cleanState?: 'pending' | 'failed'
}

export interface PlannedProfile extends Stamped {
  name: string
  description: string | null
  groups: Record<string, string>[]
}

export interface PlannedArq extends Stamped {
  state: string
  profileUuid: string
  groupId: number
  projectId: string | null
  hostname: string | null
  deviceRpUuid: string | null
  instanceUuid: string | null
  handleUuid: string | null
  deployableUuid: string | null
}

export interface ImportCounts {
  /** Rows in the source table. */
  source: number
  /** Rows brought over. */
  brought: number
  /** Rows not brought over (present ones included). */
  skipped: number
}

export interface ImportPlan {
  revision: OpenStackRevision
  devices: PlannedDevice[]
  deployables: PlannedDeployable[]
  attributes: PlannedAttribute[]
  attachHandles: PlannedHandle[]
  deviceProfiles: PlannedProfile[]
  arqs: PlannedArq[]
  skipped: SkippedRow[]
  /** Things brought over with a change, for the operator to know (one line each). */
  notes: string[]
  counts: Record<ImportTable, ImportCounts>
}

/** The running state of one plan: what is available to link to, by source row id. */
export interface PlanState {
  readonly snapshot: OpenStackSnapshot
  readonly target: TargetIndex
  /** The timestamp of rows whose source has none. */
  readonly now: string
  readonly plan: ImportPlan
  /** Devices that will be in the target (brought, or there already): source id → uuid. */
  readonly devices: Map<number, string>
  readonly deployables: Map<number, string>
  /** Attach handles available: source id → uuid and the uuid of their deployable. */
  readonly handles: Map<number, { uuid: string; deployableUuid: string }>
  readonly profiles: Map<number, string>
  skip(table: ImportTable, uuid: string, reason: string): void
  /** When the target has `uuid` already: records it skipped as present and returns true. */
  present(table: ImportTable, uuid: string, has: Set<string>): boolean
}

/**
 * OpenStack Cyborg's naive UTC DATETIME (`2026-11-25 06:58:52`, maybe with a fraction) in our
 * timestamp format (`2026-11-25T06:58:52.000000+00:00`); `fallback` when absent or unreadable.
 */
export function osTimestamp(text: string | null, fallback: string): string {
  const m = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?/.exec(text ?? '')
  if (!m) return fallback
  return `${m[1]}T${m[2]}.${(m[3] ?? '').padEnd(6, '0')}+00:00`
}
