/**
 * Kysely table types: the database as SQL sees it (snake_case, one row type per table).
 * Mapping to domain types happens in one `toX(row)` function per repository file.
 *
 * Portable column choices (the same on SQLite, PostgreSQL and MariaDB):
 * - timestamps are fixed-width ISO-8601 text (`formatTimestamp` in src/domain/time.ts);
 * - booleans are integers 0/1;
 * - JSON is text, written with `canonicalJson`.
 */
import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely'

type Id = Generated<number>
type CreatedAt = string
type UpdatedAt = string | null

export interface DevicesTable {
  id: Id
  uuid: string
  type: string
  vendor: string
  model: string
  std_board_info: string | null
  vendor_board_info: string | null
  hostname: string
  /** enabled | maintaining */
  status: ColumnType<string, string | undefined, string>
  /** inactive | ready | installing | active | error */
  lifecycle: ColumnType<string, string | undefined, string>
  lifecycle_reason: string | null
  /** ok | degraded | failed | unknown */
  health: ColumnType<string, string | undefined, string>
  /** Why health is not ok (a fenced agent, a probe's finding); null when ok. */
  health_reason: ColumnType<string | null, string | null | undefined, string | null>
  /** When health last changed; null if never. */
  health_updated_at: ColumnType<string | null, string | null | undefined, string | null>
  /** Healthy reports in a row while fenced (damping: [conductor] health_recovery_reports). */
  healthy_reports: ColumnType<number, number | undefined, number>
  /** Control path type; always 'PCI' today. */
  cpid_type: string
  /** Canonical JSON of the PCI address {bus,device,domain,function}; unique per host. */
  cpid_info: string
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface DeployablesTable {
  id: Id
  uuid: string
  device_id: number
  parent_id: number | null
  root_id: number | null
  /** Globally unique (it names the Placement resource provider). */
  name: string
  num_accelerators: number
  rp_uuid: string | null
  driver_name: string | null
  bitstream_id: string | null
  /** Hash of the provider state last confirmed in Placement; null = not in Placement. */
  placement_hash: Generated<string | null>
  /** 1 while it vanished from its host's report but is still held (ARQ or Placement allocations). */
  removal_pending: Generated<number>
  /** The operator's v1 spec (canonical JSON, migration 0005); null = derived from the inventory. */
  acc_specs: Generated<string | null>
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface AttributesTable {
  id: Id
  uuid: string
  deployable_id: number
  key: string
  value: string
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface AttachHandlesTable {
  id: Id
  uuid: string
  deployable_id: number
  /** PCI | MDEV | TEST_PCI */
  attach_type: string
  /** Canonical JSON; unique per deployable. */
  attach_info: string
  /** 0 | 1 */
  in_use: ColumnType<number, number | undefined, number>
  /** null | pending | failed (migration 0014, docs/cleaning.md); in_use stays 1 while set. */
  clean_state: ColumnType<string | null, string | null | undefined, string | null>
  clean_since: ColumnType<string | null, string | null | undefined, string | null>
  clean_attempt_at: ColumnType<string | null, string | null | undefined, string | null>
  clean_allocation_uuid: ColumnType<string | null, string | null | undefined, string | null>
  /** The program or configure holding the unit out of service (migration 0015); in_use stays 1 while set. */
  reconfig_uuid: ColumnType<string | null, string | null | undefined, string | null>
  /** program | configure */
  reconfig_kind: ColumnType<string | null, string | null | undefined, string | null>
  reconfig_since: ColumnType<string | null, string | null | undefined, string | null>
  /** The mdev of an MDEV unit's allocation, minted at its claim (migration 0018); null = `uuid`. */
  mdev_uuid: ColumnType<string | null, string | null | undefined, string | null>
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface DeviceProfilesTable {
  id: Id
  uuid: string
  name: string
  description: string | null
  /** JSON `{"groups": [...]}` */
  profile_json: string
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface AcceleratorRequestsTable {
  id: Id
  uuid: string
  /** Initial | BindStarted | Bound | BindFailed | Unbound | UnbindFailed | Deleting */
  state: string
  /** Null for an attachment made through v1 (`PUT /v1/accelerators/{uuid}`, migration 0005). */
  device_profile_id: number | null
  device_profile_group_id: number
  project_id: string | null
  hostname: string | null
  device_rp_uuid: string | null
  instance_uuid: string | null
  /** Unique: one handle is held by at most one ARQ, enforced by the database. */
  attach_handle_id: number | null
  deployable_id: number | null
  created_at: CreatedAt
  updated_at: UpdatedAt
  /** When the bind committed (migration 0016); kept while UnbindFailed or Deleting, else null. */
  bound_at: ColumnType<string | null, string | null | undefined, string | null>
  /**
   * The key of the bind that last moved it (migration 0017, one per API request): a redelivered
   * bind finds its own key here and answers from the row. Kept until the next bind; null if none.
   */
  bind_id: ColumnType<string | null, string | null | undefined, string | null>
}

/** A lock row per instance a bind has named (migration 0004). */
export interface ArqInstancesTable {
  instance_uuid: string
  updated_at: string
}

/** A project's quota lock (migration 0011). */
export interface QuotaProjectsTable {
  project_id: string
  updated_at: string
}

/**
 * Every device ever seen on a host, by identity (migration 0012, src/db/device-identities.ts;
 * docs/identity.md). Primary key (hostname, identity_key).
 */
export interface DeviceIdentitiesTable {
  hostname: string
  /** `serial:<serial>` or `path:<canonical control path>`. */
  identity_key: string
  device_uuid: string
  /** The device's lifecycle, reason and status when first seen, then when its row was last deleted. */
  lifecycle: string
  lifecycle_reason: string | null
  status: string
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface ServicesTable {
  id: Id
  host: string
  /** cyborg-api | cyborg-conductor | cyborg-agent */
  binary: string
  version: string
  /** The agent's last accepted inventory hash (agents only). */
  report_hash: string | null
  last_seen: string
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface AgentDriversTable {
  id: Id
  host: string
  driver_name: string
  version: string
  /** installed | enabled | disabled */
  state: string
  created_at: CreatedAt
  updated_at: UpdatedAt
}

/** The commit marker of a recent group-commit transaction (migration 0006, src/db/core/commit-markers.ts). */
export interface CommitMarkersTable {
  /** A uuid made before the transaction began. */
  id: string
  created_at: string
}

/** One change of a device's health (migration 0008, src/db/health-transitions.ts). */
export interface HealthTransitionsTable {
  id: Id
  device_uuid: string
  hostname: string
  from_health: string
  to_health: string
  reason: string | null
  created_at: string
}

/** The outbox: one row per state change (migration 0009, src/db/outbox/events.ts). */
export interface EventsTable {
  id: Id
  /** The event's id, stable across deliveries (receivers de-duplicate by it). */
  uuid: string
  /** `accelerator.<resource>.<action>` */
  event_type: string
  /** INFO | ERROR */
  priority: string
  /** device | deployable | arq | driver | agent */
  resource_type: string
  /** The resource's uuid (an agent: its host name; a driver: `<host>:<driver>`). */
  resource_uuid: string
  project_id: string | null
  /** Canonical JSON of the versioned payload. */
  payload: string
  created_at: string
  /** When the relay delivered it to every sink; null while unsent. */
  sent_at: string | null
}

/** The relay's lock: one row, locked across a delivery (migration 0009). */
export interface EventRelayTable {
  id: number
  updated_at: string | null
}

/** A webhook endpoint (migration 0010, src/db/outbox/webhooks.ts). */
export interface WebhooksTable {
  id: Id
  uuid: string
  url: string
  /** `whsec_<base64>`: never read by the API. */
  secret: string
  /** JSON list of event types or `prefix.*` wildcards; `[]`: all. */
  event_types: string
  /** JSON list of project ids; `[]`: all. */
  project_ids: string
  description: string | null
  enabled: number
  created_at: string
  updated_at: string | null
  /** The dispatcher holding this endpoint (a claim's token), until `claimed_until`. */
  claimed_by: string | null
  claimed_until: string | null
  /** The endpoint is backing off until then (its oldest pending delivery failed). */
  retry_at: string | null
}

/** One event for one endpoint (migration 0010, src/db/outbox/webhook-deliveries.ts). */
export interface WebhookDeliveriesTable {
  id: Id
  webhook_id: number
  event_uuid: string
  event_type: string
  /** The JSON body, the same on every attempt. */
  body: string
  /** pending | delivered | dead */
  state: string
  attempts: Generated<number>
  next_attempt_at: string
  last_attempt_at: string | null
  last_status: number | null
  last_error: string | null
  created_at: string
  finished_at: string | null
}

/** The custody ledger (migration 0013, src/db/custody.ts; docs/custody.md). */
export interface CustodyRecordsTable {
  id: Id
  /** Chain position, set by the sealer; null while unsealed. */
  seq: number | null
  prev_hash: string | null
  hash: string | null
  uuid: string
  /** allocation | clean | override | checkpoint */
  kind: string
  allocation_uuid: string | null
  arq_uuid: string | null
  device_uuid: string | null
  deployable_uuid: string | null
  handle_uuid: string | null
  device_serial: string | null
  hostname: string | null
  project_id: string | null
  user_id: string | null
  instance_uuid: string | null
  /** nova_v2 | standalone_v2 | v1_attach */
  allocated_via: string | null
  bound_at: string | null
  released_at: string | null
  clean_method: string | null
  clean_result: string | null
  clean_evidence_sha256: string | null
  cleaned_at: string | null
  detail: string | null
  created_at: string
}

/** The custody sealer's lock: one row (migration 0013). */
export interface CustodySealerTable {
  id: number
  updated_at: string | null
}

export interface Database {
  devices: DevicesTable
  deployables: DeployablesTable
  attributes: AttributesTable
  attach_handles: AttachHandlesTable
  device_profiles: DeviceProfilesTable
  accelerator_requests: AcceleratorRequestsTable
  arq_instances: ArqInstancesTable
  quota_projects: QuotaProjectsTable
  device_identities: DeviceIdentitiesTable
  services: ServicesTable
  agent_drivers: AgentDriversTable
  commit_markers: CommitMarkersTable
  health_transitions: HealthTransitionsTable
  events: EventsTable
  event_relay: EventRelayTable
  webhooks: WebhooksTable
  webhook_deliveries: WebhookDeliveriesTable
  custody_records: CustodyRecordsTable
  custody_sealer: CustodySealerTable
}

export type DeviceRow = Selectable<DevicesTable>
export type NewDeviceRow = Insertable<DevicesTable>
export type DeviceUpdate = Updateable<DevicesTable>
export type DeployableRow = Selectable<DeployablesTable>
export type AttributeRow = Selectable<AttributesTable>
export type AttachHandleRow = Selectable<AttachHandlesTable>
export type DeviceProfileRow = Selectable<DeviceProfilesTable>
export type AcceleratorRequestRow = Selectable<AcceleratorRequestsTable>
export type ServiceRow = Selectable<ServicesTable>
export type AgentDriverRow = Selectable<AgentDriversTable>
