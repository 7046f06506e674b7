/**
 * The queries of report ingestion (src/conductor/report-ingest.ts): a host's inventory rows as the
 * diff needs them (`getHostInventory`, five queries), and a diff's writes (`updateHostInventory`),
 * table by table, children first for deletes and parents first for inserts. The diff itself is
 * pure domain policy (src/domain/inventory/inventory-diff.ts). Run the writes inside a transaction.
 */
import type { Kysely } from 'kysely'
import type { ReadDb } from './core/connection.js'
import { translateDbError } from './core/errors.js'
import type { Database, DeviceRow } from './core/schema.js'
import { recordHealthChanges, type HealthTransition } from './health-transitions.js'
import { reportHealthColumns } from './device-health.js'
import { deviceFacts, listDevicesById } from './outbox/device-events.js'
import { deviceEvent } from '../domain/events.js'
import type {
  CurrentDevice,
  InventoryDiff,
  NewDeployable,
} from '../domain/inventory/inventory-diff.js'
import { moveDevices, updateDeviceIdentities } from './device-identities.js'

/** Ids per IN list and rows per multi-row INSERT: stays under every driver's parameter limit. */
const CHUNK = 500

export interface InventoryWriteOptions {
  /** New devices start `active` instead of `inactive` (embedded mode, or devices needing no install). */
  autoActivate: boolean
  /** Timestamp for created_at / updated_at (formatTimestamp). */
  now: string
  /** Devices whose health change lifts a lease fence (one `agent.lease_regained` event). */
  leaseRegained?: readonly number[]
}

/** One host's devices with their deployables, attributes and handles, and what is in use. */
export async function getHostInventory(db: ReadDb, host: string): Promise<CurrentDevice[]> {
  const devices = await db
    .selectFrom('devices')
    .selectAll()
    .where('hostname', '=', host)
    .orderBy('id')
    .execute()
  const deployables = await selectIn(
    devices.map((d) => d.id),
    (ids) =>
      db
        .selectFrom('deployables')
        .selectAll()
        .where('device_id', 'in', ids)
        .orderBy('id')
        .execute(),
  )
  const depIds = deployables.map((d) => d.id)
  const attributes = await selectIn(depIds, (ids) =>
    db
      .selectFrom('attributes')
      .selectAll()
      .where('deployable_id', 'in', ids)
      .orderBy('id')
      .execute(),
  )
  const handles = await selectIn(depIds, (ids) =>
    db
      .selectFrom('attach_handles')
      .selectAll()
      .where('deployable_id', 'in', ids)
      .orderBy('id')
      .execute(),
  )
  const arqs = await selectIn(depIds, (ids) =>
    db
      .selectFrom('accelerator_requests as a')
      .leftJoin('attach_handles as h', 'h.id', 'a.attach_handle_id')
      .select(['a.attach_handle_id', 'a.deployable_id', 'h.deployable_id as handle_deployable_id'])
      .where((eb) => eb.or([eb('a.deployable_id', 'in', ids), eb('h.deployable_id', 'in', ids)]))
      .execute(),
  )
  const heldHandles = new Set(arqs.map((a) => a.attach_handle_id))
  const namedDeployables = new Set(arqs.map((a) => a.deployable_id))

  const byDeployable = new Map<number, CurrentDevice['deployables'][number]>()
  const byDevice = new Map<number, CurrentDevice>()
  const out = devices.map((d) => {
    const cur: CurrentDevice = {
      id: d.id,
      uuid: d.uuid,
      key: d.cpid_info,
      type: d.type,
      vendor: d.vendor,
      model: d.model,
      stdBoardInfo: d.std_board_info,
      vendorBoardInfo: d.vendor_board_info,
      health: d.health,
      lifecycleReason: d.lifecycle_reason,
      healthReason: d.health_reason,
      healthyReports: d.healthy_reports,
      deployables: [],
    }
    byDevice.set(d.id, cur)
    return cur
  })
  for (const d of deployables) {
    const dep = {
      id: d.id,
      uuid: d.uuid,
      name: d.name,
      numAccelerators: d.num_accelerators,
      driverName: d.driver_name,
      rpUuid: d.rp_uuid,
      inUse: namedDeployables.has(d.id),
      inPlacement: d.placement_hash !== null,
      removalPending: Number(d.removal_pending) === 1,
      attributes: [],
      handles: [],
    }
    byDeployable.set(d.id, dep)
    byDevice.get(d.device_id)?.deployables.push(dep)
  }
  for (const a of attributes) {
    byDeployable.get(a.deployable_id)?.attributes.push({ id: a.id, key: a.key, value: a.value })
  }
  for (const h of handles) {
    byDeployable.get(h.deployable_id)?.handles.push({
      id: h.id,
      type: h.attach_type,
      info: h.attach_info,
      // A unit held by a program or configure is not a tenant's: the report may change or remove it.
      inUse: (Number(h.in_use) === 1 && h.reconfig_uuid === null) || heldHandles.has(h.id),
    })
  }
  return out
}

/**
 * Applies a diff: deletes (children first), updates, then inserts (parents first); records the
 * health transitions (devices that changed state, and new devices that arrived unhealthy) and
 * returns them. Writes the events of it all: devices removed and added, health changed.
 */
export async function updateHostInventory(
  db: Kysely<Database>,
  host: string,
  diff: InventoryDiff,
  options: InventoryWriteOptions,
): Promise<HealthTransition[]> {
  const { now, autoActivate } = options
  const removed = await listDevicesById(db, diff.removeDevices)
  await deleteIn(diff.removeAttributes, (ids) =>
    db.deleteFrom('attributes').where('id', 'in', ids).execute(),
  )
  await deleteIn(diff.removeHandles, (ids) =>
    db.deleteFrom('attach_handles').where('id', 'in', ids).execute(),
  )
  await deleteIn(diff.removeDeployables, (ids) =>
    db.deleteFrom('deployables').where('id', 'in', ids).execute(),
  )
  await deleteIn(diff.removeDevices, (ids) =>
    db.deleteFrom('devices').where('id', 'in', ids).execute(),
  )

  for (const { id, set } of diff.updateDevices) {
    await db
      .updateTable('devices')
      .set({
        type: set.type,
        vendor: set.vendor,
        model: set.model,
        std_board_info: set.stdBoardInfo,
        vendor_board_info: set.vendorBoardInfo,
        // The report's health decision (src/domain/health/report.ts), in the same UPDATE.
        ...reportHealthColumns(set, now),
        updated_at: now,
      })
      .where('id', '=', id)
      .execute()
  }
  await moveDevices(db, diff, now)
  for (const { id, set } of diff.updateDeployables) {
    await db
      .updateTable('deployables')
      .set({
        num_accelerators: set.numAccelerators,
        driver_name: set.driverName,
        rp_uuid: set.rpUuid,
        updated_at: now,
      })
      .where('id', '=', id)
      .execute()
  }
  for (const { id, value } of diff.updateAttributes) {
    await db
      .updateTable('attributes')
      .set({ value, updated_at: now })
      .where('id', '=', id)
      .execute()
  }
  for (const [ids, flag] of [
    [diff.markRemovalPending, 1],
    [diff.clearRemovalPending, 0],
  ] as const) {
    await deleteIn(ids, (chunk) =>
      db
        .updateTable('deployables')
        .set({ removal_pending: flag, updated_at: now })
        .where('id', 'in', chunk)
        .execute(),
    )
  }
  for (const { id, type } of diff.updateHandles) {
    await db
      .updateTable('attach_handles')
      .set({ attach_type: type, updated_at: now })
      .where('id', '=', id)
      .execute()
  }

  const lifecycle = autoActivate ? 'active' : 'inactive'
  const added = await insertDevices(db, host, diff, { now, lifecycle })
  const deviceIds = new Map(added.map((r) => [r.cpid_info, r.id]))
  const newDeployables = [
    ...diff.addDeployables,
    ...diff.addDevices.flatMap((d) =>
      d.deployables.map((dep) => ({ ...dep, deviceId: deviceIds.get(d.key)! })),
    ),
  ]
  const deployableIds = await insertDeployables(db, newDeployables, now)
  const attributes = [
    ...diff.addAttributes,
    ...newDeployables.flatMap((d) =>
      d.attributes.map((a) => ({ ...a, deployableId: deployableIds.get(d.name)! })),
    ),
  ]
  const handles = [
    ...diff.addHandles,
    ...newDeployables.flatMap((d) =>
      d.handles.map((h) => ({ ...h, deployableId: deployableIds.get(d.name)! })),
    ),
  ]
  await insertChunks(attributes, (rows) =>
    db
      .insertInto('attributes')
      .values(
        rows.map((a) => ({
          uuid: a.uuid,
          deployable_id: a.deployableId,
          key: a.key,
          value: a.value,
          created_at: now,
          updated_at: null,
        })),
      )
      .execute(),
  )
  await insertChunks(handles, (rows) =>
    db
      .insertInto('attach_handles')
      .values(
        rows.map((h) => ({
          uuid: h.uuid,
          deployable_id: h.deployableId,
          attach_type: h.type,
          attach_info: h.info,
          in_use: 0,
          created_at: now,
          updated_at: null,
        })),
      )
      .execute(),
  )
  const arrivedUnhealthy = diff.addDevices
    .filter((d) => d.health !== undefined && d.health.state !== 'ok')
    .map((d) => ({
      deviceId: deviceIds.get(d.key)!,
      from: 'new',
      to: d.health!.state,
      reason: d.health!.reason ?? null,
    }))
  const first = [
    ...removed.map((r) => deviceEvent('removed', deviceFacts(r), now)),
    ...added.map((r) => deviceEvent('added', deviceFacts(r), now)),
  ]
  await updateDeviceIdentities(db, host, diff, removed, now)
  const events = { first, leaseRegained: options.leaseRegained ?? [] }
  return recordHealthChanges(db, host, [...diff.healthChanges, ...arrivedUnhealthy], now, events)
}

/** Inserts the new devices and returns their rows as saved (MySQL has no RETURNING). */
async function insertDevices(
  db: Kysely<Database>,
  host: string,
  diff: InventoryDiff,
  meta: { now: string; lifecycle: string },
): Promise<DeviceRow[]> {
  await insertChunks(diff.addDevices, (rows) =>
    db
      .insertInto('devices')
      .values(
        rows.map(({ uuid, restore, key, cpidType, fields, health }) => ({
          uuid,
          type: fields.type,
          vendor: fields.vendor,
          model: fields.model,
          std_board_info: fields.stdBoardInfo,
          vendor_board_info: fields.vendorBoardInfo,
          hostname: host,
          // A device coming back gets what it had (docs/identity.md); a registered remote
          // accelerator waits for its operator (seed 000), even with auto_activate.
          status: restore?.status ?? 'enabled',
          lifecycle: restore?.lifecycle ?? (cpidType === 'REMOTE' ? 'inactive' : meta.lifecycle),
          lifecycle_reason: restore?.lifecycleReason ?? null,
          health: health?.state ?? 'ok',
          health_reason:
            health === undefined || health.state === 'ok' ? null : (health.reason ?? null),
          cpid_type: cpidType,
          cpid_info: key,
          created_at: meta.now,
          updated_at: null,
        })),
      )
      .execute(),
  )
  const rows = await selectIn(
    diff.addDevices.map((d) => d.key),
    (keys) =>
      db
        .selectFrom('devices')
        .selectAll()
        .where('hostname', '=', host)
        .where('cpid_info', 'in', keys)
        .execute(),
  )
  return rows.sort((a, b) => a.id - b.id)
}

/** Inserts new deployables and returns their ids by name (names are globally unique). */
async function insertDeployables(
  db: Kysely<Database>,
  deployables: (NewDeployable & { deviceId: number })[],
  now: string,
): Promise<Map<string, number>> {
  try {
    await insertChunks(deployables, (rows) =>
      db
        .insertInto('deployables')
        .values(
          rows.map((d) => ({
            uuid: d.uuid,
            device_id: d.deviceId,
            parent_id: null,
            root_id: null,
            name: d.name,
            num_accelerators: d.numAccelerators,
            rp_uuid: d.rpUuid,
            driver_name: d.driverName,
            bitstream_id: null,
            created_at: now,
            updated_at: null,
          })),
        )
        .execute(),
    )
  } catch (err) {
    // A name held by another host's deployable (or a kept, in-use one): the report cannot be applied.
    throw translateDbError(err, {
      entity: 'deployable',
      unique: { name: 'name', rp_uuid: 'name', uuid: 'uuid' },
      codes: { conflict: 'DEPLOYABLE_EXISTS' },
    })
  }
  const rows = await selectIn(
    deployables.map((d) => d.name),
    (names) =>
      db.selectFrom('deployables').select(['id', 'name']).where('name', 'in', names).execute(),
  )
  return new Map(rows.map((r) => [r.name, r.id]))
}

async function selectIn<K, R>(keys: K[], query: (chunk: K[]) => Promise<R[]>): Promise<R[]> {
  const out: R[] = []
  for (let i = 0; i < keys.length; i += CHUNK) out.push(...(await query(keys.slice(i, i + CHUNK))))
  return out
}

async function deleteIn(ids: number[], del: (chunk: number[]) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < ids.length; i += CHUNK) await del(ids.slice(i, i + CHUNK))
}

async function insertChunks<T>(rows: T[], insert: (chunk: T[]) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < rows.length; i += CHUNK) await insert(rows.slice(i, i + CHUNK))
}
