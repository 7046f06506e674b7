/**
 * The target side of `cyborg db import-openstack`: what our database holds already (the plan's
 * `TargetIndex`, src/domain/openstack-import/openstack-import-plan.ts), and the plan's writes, all in one
 * transaction: a failure leaves the target as it was. Rows keep OpenStack Cyborg's uuids; ids are
 * ours, resolved by uuid. Every imported device is remembered in `device_identities` under its
 * control path, so the first report of its host's agent finds it (docs/identity.md).
 */
import type { Kysely } from 'kysely'
import { ConflictError } from '../../domain/errors.js'
import type {
  ImportPlan,
  TargetIndex,
} from '../../domain/openstack-import/openstack-import-plan.js'
import { emptyTargetIndex } from '../../domain/openstack-import/openstack-import-plan.js'
import type { ReadDb } from '../core/connection.js'
import { isUniqueViolation, violatedNames } from '../core/errors.js'
import type { Database } from '../core/schema.js'

/** Rows per INSERT and uuids per IN list: under every driver's parameter limit. */
const CHUNK = 100

/**
 * `placement_hash` of an imported deployable that has a provider: OpenStack Cyborg created it, so
 * it is in Placement (its deployable is held while it may carry allocations), but never confirmed
 * by us, so the first sync writes its inventory and traits (it matches no real hash).
 */
export const IMPORTED_PLACEMENT_HASH = 'imported-from-openstack-cyborg'

/** What the target holds, as the plan needs it. */
export async function readTargetIndex(db: ReadDb): Promise<TargetIndex> {
  const index = emptyTargetIndex()
  const devices = await db.selectFrom('devices').select(['uuid', 'hostname', 'cpid_info']).execute()
  for (const d of devices) {
    index.devices.add(d.uuid)
    index.deviceKeys.set(`${d.hostname}\n${d.cpid_info}`, d.uuid)
  }
  const deployables = await db
    .selectFrom('deployables')
    .select(['uuid', 'name', 'rp_uuid'])
    .execute()
  for (const d of deployables) {
    index.deployables.add(d.uuid)
    index.deployableNames.set(d.name, d.uuid)
    if (d.rp_uuid !== null) index.rpUuids.set(d.rp_uuid, d.uuid)
  }
  const attributes = await db
    .selectFrom('attributes as a')
    .innerJoin('deployables as d', 'd.id', 'a.deployable_id')
    .select(['a.uuid', 'a.key', 'd.uuid as dep'])
    .execute()
  for (const a of attributes) {
    index.attributes.add(a.uuid)
    index.attributeKeys.add(`${a.dep}\n${a.key}`)
  }
  const handles = await db
    .selectFrom('attach_handles as h')
    .innerJoin('deployables as d', 'd.id', 'h.deployable_id')
    .select(['h.uuid', 'h.attach_info', 'd.uuid as dep'])
    .execute()
  for (const h of handles) {
    index.attachHandles.add(h.uuid)
    index.handleInfos.add(`${h.dep}\n${h.attach_info}`)
  }
  const profiles = await db.selectFrom('device_profiles').select(['uuid', 'name']).execute()
  for (const p of profiles) {
    index.deviceProfiles.add(p.uuid)
    index.profileNames.set(p.name, p.uuid)
  }
  const arqs = await db
    .selectFrom('accelerator_requests as a')
    .leftJoin('attach_handles as h', 'h.id', 'a.attach_handle_id')
    .select(['a.uuid', 'h.uuid as handle'])
    .execute()
  for (const a of arqs) {
    index.arqs.add(a.uuid)
    if (a.handle !== null) index.heldHandles.set(a.handle, a.uuid)
  }
  const identities = await db.selectFrom('device_identities').select('hostname').limit(1).execute()
  index.empty =
    devices.length + deployables.length + profiles.length + arqs.length + identities.length === 0
  return index
}

/**
 * Reads the target, builds the plan from it (`build` may refuse by throwing) and, unless
 * `dryRun`, writes it in one transaction. Returns the plan.
 */
export async function importIntoTarget(
  db: Kysely<Database>,
  build: (index: TargetIndex) => ImportPlan,
  options: { dryRun: boolean; now: string },
): Promise<ImportPlan> {
  if (options.dryRun) return build(await readTargetIndex(db))
  return db.transaction().execute(async (trx) => {
    const plan = build(await readTargetIndex(trx))
    try {
      await writePlan(trx, plan, options.now)
    } catch (err) {
      if (!isUniqueViolation(err)) throw err
      throw new ConflictError(
        `an imported row collides with one in the target (${violatedNames(err).join(', ')}); nothing was written`,
        { code: 'IMPORT_CONFLICT', cause: err },
      )
    }
    return plan
  })
}

async function chunks<T>(rows: readonly T[], run: (chunk: T[]) => Promise<unknown>) {
  for (let i = 0; i < rows.length; i += CHUNK) await run(rows.slice(i, i + CHUNK))
}

type IdTable = 'devices' | 'deployables' | 'attach_handles' | 'device_profiles'

/** Our ids of the rows with these uuids (new or already there). */
async function idsOf(
  db: Kysely<Database>,
  table: IdTable,
  uuids: readonly (string | null)[],
): Promise<Map<string, number>> {
  const wanted = [...new Set(uuids.filter((u): u is string => u !== null))]
  const ids = new Map<string, number>()
  await chunks(wanted, async (chunk) => {
    const rows = await db
      .selectFrom(table as 'devices')
      .select(['id', 'uuid'])
      .where('uuid', 'in', chunk)
      .execute()
    for (const r of rows) ids.set(r.uuid, Number(r.id))
  })
  return ids
}

const id = (ids: Map<string, number>, uuid: string | null): number | null =>
  uuid === null ? null : (ids.get(uuid) ?? null)

async function writePlan(db: Kysely<Database>, plan: ImportPlan, now: string): Promise<void> {
  await chunks(plan.devices, (rows) =>
    db
      .insertInto('devices')
      .values(
        rows.map((d) => ({
          uuid: d.uuid,
          type: d.type,
          vendor: d.vendor,
          model: d.model,
          std_board_info: d.stdBoardInfo,
          vendor_board_info: d.vendorBoardInfo,
          hostname: d.hostname,
          status: d.status,
          // It was in service under OpenStack Cyborg: offered from the start.
          lifecycle: 'active',
          lifecycle_reason: null,
          // Fenced when OpenStack Cyborg left it in error (openstack-import-device-state.ts).
          health: d.health ?? 'ok',
          health_reason: d.healthReason ?? null,
          health_updated_at: d.health === undefined ? null : now,
          cpid_type: d.cpidType,
          cpid_info: d.cpidInfo,
          created_at: d.createdAt,
          updated_at: d.updatedAt,
        })),
      )
      .execute(),
  )
  for (const d of plan.devices) {
    const set = {
      device_uuid: d.uuid,
      lifecycle: 'active',
      lifecycle_reason: null,
      status: d.status,
      updated_at: now,
    }
    const updated = await db
      .updateTable('device_identities')
      .set(set)
      .where('hostname', '=', d.hostname)
      .where('identity_key', '=', d.identityKey)
      .executeTakeFirst()
    if (Number(updated.numUpdatedRows) === 0) {
      await db
        .insertInto('device_identities')
        .values({
          ...set,
          hostname: d.hostname,
          identity_key: d.identityKey,
          created_at: now,
          updated_at: null,
        })
        .execute()
    }
  }
  await writeInventory(db, plan, now)
  await writeRequests(db, plan, now)
}

async function writeInventory(db: Kysely<Database>, plan: ImportPlan, now: string): Promise<void> {
  const deviceIds = await idsOf(
    db,
    'devices',
    plan.deployables.map((d) => d.deviceUuid),
  )
  await chunks(plan.deployables, (rows) =>
    db
      .insertInto('deployables')
      .values(
        rows.map((d) => ({
          uuid: d.uuid,
          device_id: deviceIds.get(d.deviceUuid)!,
          parent_id: null,
          root_id: null,
          name: d.name,
          num_accelerators: d.numAccelerators,
          rp_uuid: d.rpUuid,
          driver_name: d.driverName,
          bitstream_id: d.bitstreamId,
          placement_hash: d.rpUuid === null ? null : IMPORTED_PLACEMENT_HASH,
          created_at: d.createdAt,
          updated_at: d.updatedAt,
        })),
      )
      .execute(),
  )
  const depIds = await idsOf(db, 'deployables', [
    ...plan.deployables.flatMap((d) => [d.uuid, d.parentUuid, d.rootUuid]),
    ...plan.attributes.map((a) => a.deployableUuid),
    ...plan.attachHandles.map((h) => h.deployableUuid),
    ...plan.arqs.map((a) => a.deployableUuid),
  ])
  for (const d of plan.deployables) {
    if (d.parentUuid === null && d.rootUuid === null) continue
    await db
      .updateTable('deployables')
      .set({ parent_id: id(depIds, d.parentUuid), root_id: id(depIds, d.rootUuid) })
      .where('uuid', '=', d.uuid)
      .execute()
  }
  await chunks(plan.attributes, (rows) =>
    db
      .insertInto('attributes')
      .values(
        rows.map((a) => ({
          uuid: a.uuid,
          deployable_id: depIds.get(a.deployableUuid)!,
          key: a.key,
          value: a.value,
          created_at: a.createdAt,
          updated_at: a.updatedAt,
        })),
      )
      .execute(),
  )
  await chunks(plan.attachHandles, (rows) =>
    db
      .insertInto('attach_handles')
      .values(
        rows.map((h) => ({
          uuid: h.uuid,
          deployable_id: depIds.get(h.deployableUuid)!,
          attach_type: h.attachType,
          attach_info: h.attachInfo,
          in_use: h.inUse ? 1 : 0,
          // A unit of a device OpenStack Cyborg was cleaning (or left in error): a release
          // without a custody interval, cleaned (or failed) from the import on (docs/cleaning.md).
          clean_state: h.cleanState ?? null,
          clean_since: h.cleanState === undefined ? null : now,
          created_at: h.createdAt,
          updated_at: h.updatedAt,
        })),
      )
      .execute(),
  )
}

async function writeRequests(db: Kysely<Database>, plan: ImportPlan, now: string): Promise<void> {
  await chunks(plan.deviceProfiles, (rows) =>
    db
      .insertInto('device_profiles')
      .values(
        rows.map((p) => ({
          uuid: p.uuid,
          name: p.name,
          description: p.description,
          // As createDeviceProfile writes it: group key order kept.
          profile_json: JSON.stringify({ groups: p.groups }),
          created_at: p.createdAt,
          updated_at: p.updatedAt,
        })),
      )
      .execute(),
  )
  const profileIds = await idsOf(
    db,
    'device_profiles',
    plan.arqs.map((a) => a.profileUuid),
  )
  const handleIds = await idsOf(
    db,
    'attach_handles',
    plan.arqs.map((a) => a.handleUuid),
  )
  const depIds = await idsOf(
    db,
    'deployables',
    plan.arqs.map((a) => a.deployableUuid),
  )
  await chunks(plan.arqs, (rows) =>
    db
      .insertInto('accelerator_requests')
      .values(
        rows.map((a) => ({
          uuid: a.uuid,
          state: a.state,
          device_profile_id: profileIds.get(a.profileUuid)!,
          device_profile_group_id: a.groupId,
          project_id: a.projectId,
          hostname: a.hostname,
          device_rp_uuid: a.deviceRpUuid,
          instance_uuid: a.instanceUuid,
          attach_handle_id: id(handleIds, a.handleUuid),
          deployable_id: id(depIds, a.deployableUuid),
          created_at: a.createdAt,
          updated_at: a.updatedAt,
          // OpenStack keeps no bind time: its last change is the best known for a Bound request.
          bound_at: a.state === 'Bound' ? (a.updatedAt ?? a.createdAt) : null,
        })),
      )
      .execute(),
  )
  // The bind locks of the instances the requests name (src/db/arq-instances.ts), as a bind leaves them.
  const instances = [...new Set(plan.arqs.map((a) => a.instanceUuid).filter((i) => i !== null))]
  const existing = new Set<string>()
  await chunks(instances, async (chunk) => {
    const rows = await db
      .selectFrom('arq_instances')
      .select('instance_uuid')
      .where('instance_uuid', 'in', chunk)
      .execute()
    for (const r of rows) existing.add(r.instance_uuid)
  })
  await chunks(
    instances.filter((i) => !existing.has(i)),
    (rows) =>
      db
        .insertInto('arq_instances')
        .values(rows.map((instance_uuid) => ({ instance_uuid, updated_at: now })))
        .execute(),
  )
}
