/**
 * Where an ARQ may be bound: the deployable behind a Placement provider (Nova's path), or the
 * offered deployables of a host that satisfy a request group (standalone). Read-only.
 */
import type { Kysely } from 'kysely'
import type { Arq } from '../domain/arq.js'
import { isOffered } from '../domain/inventory.js'
import { toArq } from './arqs.js'
import type { DialectName } from './connection.js'
import type { Database } from './schema.js'

export interface BindTarget {
  deployableId: number
  rpUuid: string | null
  /** The device's control path (canonical JSON of its PCI address): what FPGA programming targets. */
  controlPath: string
  /** The image the FPGA was last programmed with, if any. */
  bitstreamId: string | null
  name: string
  hostname: string
  /** Active, enabled, healthy and not pending removal. */
  offered: boolean
  attributes: { key: string; value: string }[]
}

const base = (db: Kysely<Database>) =>
  db
    .selectFrom('deployables as p')
    .innerJoin('devices as d', 'd.id', 'p.device_id')
    .select(['p.id', 'p.name', 'p.rp_uuid', 'p.bitstream_id', 'p.removal_pending', 'd.cpid_info', 'd.hostname', 'd.lifecycle', 'd.status', 'd.health'])

type Row = { id: number; name: string; rp_uuid: string | null; bitstream_id: string | null; cpid_info: string; removal_pending: number; hostname: string; lifecycle: string; status: string; health: string }

async function withAttributes(db: Kysely<Database>, rows: Row[]): Promise<BindTarget[]> {
  if (rows.length === 0) return []
  const attrs = await db
    .selectFrom('attributes')
    .select(['deployable_id', 'key', 'value'])
    .where('deployable_id', 'in', rows.map((r) => r.id))
    .orderBy('id')
    .execute()
  return rows.map((r) => ({
    deployableId: r.id,
    rpUuid: r.rp_uuid,
    controlPath: r.cpid_info,
    bitstreamId: r.bitstream_id,
    name: r.name,
    hostname: r.hostname,
    offered: isOffered({ lifecycle: r.lifecycle, status: r.status, health: r.health, removalPending: Number(r.removal_pending) === 1 }),
    attributes: attrs.filter((a) => a.deployable_id === r.id).map(({ key, value }) => ({ key, value })),
  }))
}

/** The deployable whose resource provider is `rpUuid`, or undefined. */
export async function targetByProvider(db: Kysely<Database>, rpUuid: string): Promise<BindTarget | undefined> {
  const rows = await base(db).where('p.rp_uuid', '=', rpUuid).execute()
  return (await withAttributes(db, rows))[0]
}

/** The deployable with id `id`, or undefined. */
export async function targetById(db: Kysely<Database>, id: number): Promise<BindTarget | undefined> {
  return (await withAttributes(db, await base(db).where('p.id', '=', id).execute()))[0]
}

/** Every deployable of `host`, in id order (the caller filters by resource class and traits). */
export async function targetsOnHost(db: Kysely<Database>, host: string): Promise<BindTarget[]> {
  return withAttributes(db, await base(db).where('d.hostname', '=', host).orderBy('p.id').execute())
}

/**
 * Takes the bind lock of each instance (an upsert of its `arq_instances` row, in sorted order), so
 * that binds naming one instance run one after the other, through any number of conductors. Run it
 * in the bind's transaction, before `boundArqsOfInstance`; the lock holds until that commits.
 */
export async function lockInstances(db: Kysely<Database>, dialect: DialectName, instances: Iterable<string>, now: string): Promise<void> {
  for (const instance of [...new Set(instances)].sort()) {
    const insert = db.insertInto('arq_instances').values({ instance_uuid: instance, updated_at: now })
    await (dialect === 'mysql'
      ? insert.onDuplicateKeyUpdate({ updated_at: now })
      : insert.onConflict((oc) => oc.column('instance_uuid').doUpdateSet({ updated_at: now }))
    ).execute()
  }
}

/** Deletes the bind locks of instances that no request names and no bind touched since `cutoff`. */
export async function sweepInstanceLocks(db: Kysely<Database>, cutoff: string): Promise<number> {
  const res = await db
    .deleteFrom('arq_instances')
    .where('updated_at', '<', cutoff)
    .where(({ not, exists, selectFrom, ref }) =>
      not(exists(selectFrom('accelerator_requests').select('id').where('instance_uuid', '=', ref('arq_instances.instance_uuid')))),
    )
    .executeTakeFirst()
  return Number(res.numDeletedRows)
}

/**
 * For each of `rps` that is a deployable's resource provider: how many of `instance`'s requests
 * hold that deployable (a claimed handle, whatever the state). Other providers are left out.
 */
export async function heldByInstance(db: Kysely<Database>, instance: string, rps: string[]): Promise<Map<string, number>> {
  if (rps.length === 0) return new Map()
  const rows = await db
    .selectFrom('deployables as d')
    .leftJoin('accelerator_requests as a', (j) => j.onRef('a.deployable_id', '=', 'd.id').on('a.instance_uuid', '=', instance))
    .select(['d.rp_uuid', (eb) => eb.fn.count<string | number>('a.id').as('held')])
    .where('d.rp_uuid', 'in', rps)
    .groupBy('d.rp_uuid')
    .execute()
  return new Map(rows.map((r) => [r.rp_uuid!, Number(r.held)]))
}

/** ARQs of `instanceUuid` other than `except` that hold a binding (BindStarted or Bound). */
export async function boundArqsOfInstance(
  db: Kysely<Database>,
  instanceUuid: string,
  except: readonly string[],
): Promise<string[]> {
  let qb = db
    .selectFrom('accelerator_requests')
    .select('uuid')
    .where('instance_uuid', '=', instanceUuid)
    .where('state', 'in', ['BindStarted', 'Bound'])
  if (except.length > 0) qb = qb.where('uuid', 'not in', [...except])
  return (await qb.execute()).map((r) => r.uuid)
}

/**
 * Records the claimed handle on an ARQ that is still BindStarted, in the claim's transaction, so a
 * crash never leaves a handle in use that no ARQ names. False when the ARQ moved meanwhile.
 */
export async function attachHandleToArq(
  db: Kysely<Database>,
  uuid: string,
  handle: { id: number; deployableId: number },
  now: string,
): Promise<boolean> {
  const res = await db
    .updateTable('accelerator_requests')
    .set({ attach_handle_id: handle.id, deployable_id: handle.deployableId, updated_at: now })
    .where('uuid', '=', uuid)
    .where('state', '=', 'BindStarted')
    .executeTakeFirst()
  return Number(res.numUpdatedRows) === 1
}

/** One attach handle by id (type and parsed info), or undefined. */
export async function handleById(
  db: Kysely<Database>,
  id: number,
): Promise<{ id: number; uuid: string; type: string; info: Record<string, string> } | undefined> {
  const row = await db.selectFrom('attach_handles').select(['id', 'uuid', 'attach_type', 'attach_info']).where('id', '=', id).executeTakeFirst()
  return row && { id: row.id, uuid: row.uuid, type: row.attach_type, info: JSON.parse(row.attach_info) as Record<string, string> }
}

/** ARQs stuck in BindStarted since before `cutoff` (a conductor died, or an agent never answered). */
export async function staleBinds(
  db: Kysely<Database>,
  cutoff: string,
  limit = 500,
): Promise<{ uuid: string; attachHandleId: number | null; instanceUuid: string | null; deviceProfileId: number | null }[]> {
  const rows = await db
    .selectFrom('accelerator_requests')
    .select(['uuid', 'attach_handle_id', 'instance_uuid', 'device_profile_id'])
    .where('state', '=', 'BindStarted')
    .where((eb) => eb.or([eb('updated_at', '<', cutoff), eb.and([eb('updated_at', 'is', null), eb('created_at', '<', cutoff)])]))
    .orderBy('id')
    .limit(limit)
    .execute()
  return rows.map((r) => ({ uuid: r.uuid, attachHandleId: r.attach_handle_id, instanceUuid: r.instance_uuid, deviceProfileId: r.device_profile_id }))
}

/** Records the image a deployable's FPGA now runs. */
export async function setBitstream(db: Kysely<Database>, deployableId: number, imageId: string, now: string): Promise<void> {
  await db.updateTable('deployables').set({ bitstream_id: imageId, updated_at: now }).where('id', '=', deployableId).execute()
}

/** Requests left Deleting since before `cutoff` (a conductor died mid-delete, or an agent failed). */
export async function staleDeletes(db: Kysely<Database>, cutoff: string, limit = 500): Promise<Arq[]> {
  const rows = await db
    .selectFrom('accelerator_requests')
    .selectAll()
    .where('state', '=', 'Deleting')
    .where((eb) => eb.or([eb('updated_at', '<', cutoff), eb.and([eb('updated_at', 'is', null), eb('created_at', '<', cutoff)])]))
    .orderBy('id')
    .limit(limit)
    .execute()
  return rows.map(toArq)
}
