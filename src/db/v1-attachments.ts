/**
 * What the v1 writes (api-v1-and-cli.md) read and write: an accelerator (a deployable) locked for
 * an attach or a spec update, the requests that hold it, a v1 attachment (an accelerator request
 * with no device profile), and the stored spec.
 *
 * Locks: `getAcceleratorForUpdate` takes the deployable's row lock (FOR UPDATE on PostgreSQL and MariaDB;
 * SQLite has one writer), so attaches of one accelerator run one after the other through any
 * number of conductors, and `listHolders` is a locking read, which sees the latest committed rows
 * even where the transaction's snapshot is older (MariaDB's REPEATABLE READ).
 */
import type { Kysely } from 'kysely'
import type { Arq, ArqState } from '../domain/arq.js'
import { NotFoundError } from '../domain/errors.js'
import { isOffered } from '../domain/inventory/inventory.js'
import { newUuid } from '../domain/ids.js'
import { toArq } from './reads/arq-views.js'
import type { DialectName, ReadDb } from './core/connection.js'
import type { Database } from './core/schema.js'

/** An accelerator as an attach or a spec update sees it. */
export interface AttachableAccelerator {
  id: number
  uuid: string
  name: string
  rpUuid: string | null
  numAccelerators: number
  hostname: string
  lifecycle: string
  lifecycleReason: string | null
  status: string
  removalPending: boolean
  /** Active, enabled, healthy and not pending removal: what may be allocated. */
  offered: boolean
  health: string
  healthReason: string | null
  /** The stored v1 spec (canonical JSON), or null. */
  accSpecs: string | null
  /** Its resource class (the `rc` attribute), if it has one. */
  rc: string | undefined
}

/** Request states that hold an accelerator (or may: a Deleting one still has its handle). */
export const HOLDING_STATES: readonly ArqState[] = [
  'BindStarted',
  'Bound',
  'UnbindFailed',
  'Deleting',
]

const notFound = (uuid: string) =>
  new NotFoundError(`accelerator ${uuid} not found`, {
    code: 'ACCELERATOR_NOT_FOUND',
    details: { uuid },
  })

/**
 * The accelerator with this uuid, its deployable row locked until the transaction ends when `lock`.
 * @throws NotFoundError (ACCELERATOR_NOT_FOUND)
 */
export async function getAcceleratorForUpdate(
  db: ReadDb,
  dialect: DialectName,
  uuid: string,
  lock = true,
): Promise<AttachableAccelerator> {
  const qb = db
    .selectFrom('deployables as p')
    .innerJoin('devices as d', 'd.id', 'p.device_id')
    .select([
      'p.id',
      'p.uuid',
      'p.name',
      'p.rp_uuid',
      'p.num_accelerators',
      'p.removal_pending',
      'p.acc_specs',
      'd.hostname',
      'd.lifecycle',
      'd.lifecycle_reason',
      'd.status',
      'd.health',
      'd.health_reason',
    ])
    .where('p.uuid', '=', uuid)
  const row = await (lock && dialect !== 'sqlite' ? qb.forUpdate() : qb).executeTakeFirst()
  if (!row) throw notFound(uuid)
  const rc = await db
    .selectFrom('attributes')
    .select('value')
    .where('deployable_id', '=', row.id)
    .where('key', '=', 'rc')
    .executeTakeFirst()
  return {
    id: row.id,
    uuid: row.uuid,
    name: row.name,
    rpUuid: row.rp_uuid,
    numAccelerators: row.num_accelerators,
    hostname: row.hostname,
    lifecycle: row.lifecycle,
    lifecycleReason: row.lifecycle_reason,
    status: row.status,
    removalPending: Number(row.removal_pending) === 1,
    offered: isOffered({
      lifecycle: row.lifecycle,
      status: row.status,
      health: row.health,
      removalPending: Number(row.removal_pending) === 1,
    }),
    health: row.health,
    healthReason: row.health_reason,
    accSpecs: row.acc_specs,
    rc: rc?.value,
  }
}

/** The requests (v1 and v2) that hold deployable `id`, in id order; a locking read outside SQLite when `lock`. */
export async function listHolders(
  db: ReadDb,
  dialect: DialectName,
  id: number,
  lock = true,
): Promise<Arq[]> {
  const qb = db
    .selectFrom('accelerator_requests')
    .selectAll()
    .where('deployable_id', '=', id)
    .where('state', 'in', [...HOLDING_STATES])
    .orderBy('id')
  return (await (lock && dialect !== 'sqlite' ? qb.forUpdate() : qb).execute()).map(toArq)
}

/** Every v1 attachment of deployable `id`, whatever its state (a failed one included), in id order. */
export async function listV1Attachments(db: ReadDb, id: number): Promise<Arq[]> {
  const rows = await db
    .selectFrom('accelerator_requests')
    .selectAll()
    .where('deployable_id', '=', id)
    .where('device_profile_id', 'is', null)
    .orderBy('id')
    .execute()
  return rows.map(toArq)
}

/** Does deployable `id` have attach handles (a device the host's agent prepares)? */
export async function hasHandles(db: ReadDb, id: number): Promise<boolean> {
  return (
    (await db
      .selectFrom('attach_handles')
      .select('id')
      .where('deployable_id', '=', id)
      .limit(1)
      .executeTakeFirst()) !== undefined
  )
}

/** Records a v1 attachment: an accelerator request with no device profile. */
export async function createAttachment(
  db: Kysely<Database>,
  input: {
    state: ArqState
    deployableId: number
    rpUuid: string | null
    hostname: string
    instanceUuid: string | null
    attachHandleId: number | null
    /** The caller's project (quota counts it, docs/quota.md); null when unknown. */
    projectId?: string | null
    /** Made by the caller before the write runs, so that a re-run writes the same row. @default a new one */
    uuid?: string
  },
  now: string,
): Promise<Arq> {
  const uuid = input.uuid ?? newUuid()
  await db
    .insertInto('accelerator_requests')
    .values({
      uuid,
      state: input.state,
      device_profile_id: null,
      device_profile_group_id: 0,
      project_id: input.projectId ?? null,
      hostname: input.hostname,
      device_rp_uuid: input.rpUuid,
      instance_uuid: input.instanceUuid,
      attach_handle_id: input.attachHandleId,
      deployable_id: input.deployableId,
      created_at: now,
      updated_at: null,
      bound_at: input.state === 'Bound' ? now : null,
    })
    .execute()
  return toArq(
    await db
      .selectFrom('accelerator_requests')
      .selectAll()
      .where('uuid', '=', uuid)
      .executeTakeFirstOrThrow(),
  )
}

/** Stores the v1 spec of deployable `id` (canonical JSON). */
export async function updateAccSpecs(
  db: Kysely<Database>,
  id: number,
  accSpecs: string,
  now: string,
): Promise<void> {
  await db
    .updateTable('deployables')
    .set({ acc_specs: accSpecs, updated_at: now })
    .where('id', '=', id)
    .execute()
}
