/**
 * Accelerator requests (ARQs): create, read, move through the state machine of src/domain/arq.ts
 * with one conditional UPDATE, record the handle a bind claimed, delete; and list the requests the
 * reaper finishes (stale binds and deletes).
 */
import type { Kysely, Updateable } from 'kysely'
import { allowedFrom, type Arq, type ArqSpec, type ArqState } from '../domain/arq.js'
import { NotFoundError } from '../domain/errors.js'
import { newUuid } from '../domain/ids.js'
import { dialectOf, type ReadDb } from './core/connection.js'
import { translateDbError } from './core/errors.js'
import { paginate, type PageOptions, type PageSpec } from './core/pagination.js'
import { precompile } from './core/precompiled.js'
import type { AcceleratorRequestRow, AcceleratorRequestsTable, Database } from './core/schema.js'
import { toArq } from './reads/arq-views.js'

/** Rows per multi-row INSERT and ids per IN list: under every driver's parameter limit. */
const CHUNK = 500

const PAGE: PageSpec<'id'> = {
  table: 'accelerator_requests',
  keys: ['id'],
  nullable: [],
  notFoundCode: 'ARQ_NOT_FOUND',
}

const chunks = <T>(items: readonly T[]): T[][] =>
  Array.from({ length: Math.ceil(items.length / CHUNK) }, (_, i) =>
    items.slice(i * CHUNK, (i + 1) * CHUNK),
  )

/** The columns a new request leaves null. */
const NOTHING_HELD = {
  hostname: null,
  device_rp_uuid: null,
  instance_uuid: null,
  attach_handle_id: null,
  deployable_id: null,
  bound_at: null,
  bind_id: null,
}

/** What `createArqs` stores: one row per spec, all of one profile. */
export interface NewArqs {
  profileId: number
  specs: readonly Pick<ArqSpec, 'groupId'>[]
  projectId: string | null
}

/**
 * Inserts one ARQ per spec in state Initial (one multi-row INSERT per 500) and returns them in
 * spec order. Run it in a transaction so that a failure leaves none behind.
 * @throws NotFoundError (code DEVICE_PROFILE_NOT_FOUND) when the profile does not exist.
 */
export async function createArqs(
  db: Kysely<Database>,
  input: NewArqs,
  options: { now: string; uuid?: () => string },
): Promise<Arq[]> {
  const { now, uuid = newUuid } = options
  const rows = input.specs.map((spec) => ({
    uuid: uuid(),
    state: 'Initial' satisfies ArqState,
    device_profile_id: input.profileId,
    device_profile_group_id: spec.groupId,
    project_id: input.projectId,
    created_at: now,
    updated_at: null,
  }))
  const out: Arq[] = []
  const dialect = dialectOf(db)
  for (const chunk of chunks(rows)) {
    let saved: AcceleratorRequestRow[] | undefined
    try {
      const insert = db.insertInto('accelerator_requests').values(chunk)
      // Saved as given, plus the id (issue 28: no read back): RETURNING where there is one; on
      // MariaDB the id of a one-row INSERT (a multi-row one's ids need not be consecutive).
      if (dialect !== 'mysql') saved = await insert.returningAll().execute()
      else if (chunk.length > 1) await insert.execute()
      else {
        const id = Number((await insert.executeTakeFirstOrThrow()).insertId)
        saved = [{ ...NOTHING_HELD, ...chunk[0]!, id }]
      }
    } catch (err) {
      throw translateDbError(err, {
        entity: 'accelerator request',
        unique: 'uuid',
        missingParent: 'device_profile_id',
        codes: { notFound: 'DEVICE_PROFILE_NOT_FOUND', conflict: 'ARQ_EXISTS' },
      })
    }
    const uuids = chunk.map((r) => r.uuid)
    saved ??= await db
      .selectFrom('accelerator_requests')
      .selectAll()
      .where('uuid', 'in', uuids)
      .execute()
    const byUuid = new Map(saved.map((r) => [r.uuid, r]))
    for (const u of uuids) out.push(toArq(byUuid.get(u)!))
  }
  return out
}

/** @throws NotFoundError with code ARQ_NOT_FOUND. */
export async function getArq(db: ReadDb, uuid: string): Promise<Arq> {
  const row = await db
    .selectFrom('accelerator_requests')
    .selectAll()
    .where('uuid', '=', uuid)
    .executeTakeFirst()
  if (!row)
    throw new NotFoundError(`accelerator request ${uuid} not found`, {
      code: 'ARQ_NOT_FOUND',
      details: { uuid },
    })
  return toArq(row)
}

// Precompiled: every bind locks its requests with it (see precompiled.ts).
const arqByUuid = precompile((db: ReadDb, uuid: string) =>
  db.selectFrom('accelerator_requests').selectAll().where('uuid', '=', uuid),
)
const arqByUuidLocked = precompile((db: ReadDb, uuid: string) =>
  db.selectFrom('accelerator_requests').selectAll().where('uuid', '=', uuid).forUpdate(),
)

/**
 * One ARQ, read with its row locked until the transaction ends (FOR UPDATE on PostgreSQL and
 * MariaDB; SQLite's one writer needs none), so a concurrent bind cannot change it meanwhile.
 * @throws NotFoundError with code ARQ_NOT_FOUND.
 */
export async function getArqForUpdate(db: Kysely<Database>, uuid: string): Promise<Arq> {
  const row = await (dialectOf(db) === 'sqlite' ? arqByUuid : arqByUuidLocked).first(db, uuid)
  if (!row)
    throw new NotFoundError(`accelerator request ${uuid} not found`, {
      code: 'ARQ_NOT_FOUND',
      details: { uuid },
    })
  return toArq(row)
}

/** Filters of `listArqs`; exact matches, combined with AND. */
export interface ArqFilter extends Omit<PageOptions<'id'>, 'sortKey' | 'sortDir'> {
  instanceUuid?: string
  projectId?: string
}

/**
 * Lists ARQs in id order.
 * @throws NotFoundError (code ARQ_NOT_FOUND, `details.field` 'marker') for an unknown marker.
 */
export async function listArqs(db: ReadDb, filter: ArqFilter = {}): Promise<Arq[]> {
  let qb = db.selectFrom('accelerator_requests').selectAll()
  if (filter.instanceUuid !== undefined) qb = qb.where('instance_uuid', '=', filter.instanceUuid)
  if (filter.projectId !== undefined) qb = qb.where('project_id', '=', filter.projectId)
  const page: PageOptions<'id'> = {}
  if (filter.limit !== undefined) page.limit = filter.limit
  if (filter.marker !== undefined) page.marker = filter.marker
  qb = await paginate(db, qb, PAGE, page)
  return (await qb.execute()).map(toArq)
}

/** Columns a transition may set along with the state; `null` clears one. */
export interface ArqBinding {
  hostname?: string | null
  deviceRpUuid?: string | null
  instanceUuid?: string | null
  projectId?: string | null
  attachHandleId?: number | null
  deployableId?: number | null
  /** The key of the bind that moves it (migration 0017). */
  bindId?: string | null
}

/** The outcome of `updateArqStates`. */
export interface TransitionResult {
  /** How many rows moved. */
  count: number
  /** The rows that moved, as saved, in id order. */
  moved: Arq[]
}

/**
 * Moves the named ARQs to `to`, each only if its current state is in `allowedFrom(to)`, with ONE
 * conditional UPDATE (per 500 uuids); the others stay as they are. On PostgreSQL and SQLite the
 * UPDATE returns the moved rows. MariaDB has no UPDATE … RETURNING, so the candidates are first
 * locked with SELECT … FOR UPDATE; inside a transaction the answer is then exact, outside one the
 * UPDATE is still conditional and `moved` is re-read as the candidates now in `to` at `now`.
 * @throws ConflictError (code ATTACH_HANDLE_IN_USE) when `set.attachHandleId` is held by another ARQ.
 * @throws NotFoundError when `set` names a handle or deployable that does not exist.
 */
export async function updateArqStates(
  db: Kysely<Database>,
  uuids: readonly string[],
  to: ArqState,
  options: { now: string; set?: ArqBinding },
): Promise<TransitionResult> {
  const from = [...allowedFrom(to)]
  const result: TransitionResult = { count: 0, moved: [] }
  if (from.length === 0) return result
  const values = {
    ...toColumns(options.set ?? {}),
    state: to,
    updated_at: options.now,
    ...boundAtOf(to, options.now),
  }
  const mysql = dialectOf(db) === 'mysql'
  try {
    for (const chunk of chunks([...new Set(uuids)])) {
      const rows = mysql
        ? await transitionLocked(db, chunk, from, to, values)
        : await db
            .updateTable('accelerator_requests')
            .set(values)
            .where('uuid', 'in', chunk)
            .where('state', 'in', from)
            .returningAll()
            .execute()
      result.count += rows.length
      result.moved.push(...rows.map(toArq))
    }
  } catch (err) {
    throw translateDbError(err, {
      entity: 'accelerator request',
      unique: 'attachHandleId',
      missingParent: 'attachHandleId or deployableId',
      codes: { conflict: 'ATTACH_HANDLE_IN_USE' },
    })
  }
  result.moved.sort((a, b) => a.id - b.id)
  return result
}

type ArqUpdate = Updateable<AcceleratorRequestsTable>
type ArqValues = ArqUpdate & { state: ArqState; updated_at: string }

async function transitionLocked(
  db: Kysely<Database>,
  uuids: string[],
  from: ArqState[],
  to: ArqState,
  values: ArqValues,
): Promise<AcceleratorRequestRow[]> {
  const locked = await db
    .selectFrom('accelerator_requests')
    .selectAll()
    .where('uuid', 'in', uuids)
    .where('state', 'in', from)
    .forUpdate()
    .execute()
  const ids = locked.map((r) => r.id)
  if (ids.length === 0) return []
  const res = await db
    .updateTable('accelerator_requests')
    .set(values)
    .where('id', 'in', ids)
    .where('state', 'in', from)
    .executeTakeFirst()
  // In a transaction the rows stay locked from the read to the UPDATE, which changed them all: the
  // saved rows are the locked ones with `values` applied (one read fewer per transition, issue 28).
  if (db.isTransaction && Number(res.numUpdatedRows) === ids.length)
    return locked.map((row) => ({ ...row, ...values }) as AcceleratorRequestRow)
  let qb = db.selectFrom('accelerator_requests').selectAll().where('id', 'in', ids)
  if (Number(res.numUpdatedRows) !== ids.length) {
    qb = qb.where('state', '=', to).where('updated_at', '=', values.updated_at)
  }
  return qb.execute()
}

/**
 * The bind time a move to `to` writes: the move's own time for Bound (it commits with the bind),
 * kept for UnbindFailed and Deleting (the request still holds what it was bound to), cleared for
 * the states that hold nothing.
 */
export function boundAtOf(to: ArqState, now: string): { bound_at?: string | null } {
  if (to === 'Bound') return { bound_at: now }
  if (to === 'UnbindFailed' || to === 'Deleting') return {}
  return { bound_at: null }
}

export function toColumns(set: ArqBinding): ArqUpdate {
  const out: ArqUpdate = {}
  if (set.hostname !== undefined) out.hostname = set.hostname
  if (set.deviceRpUuid !== undefined) out.device_rp_uuid = set.deviceRpUuid
  if (set.instanceUuid !== undefined) out.instance_uuid = set.instanceUuid
  if (set.projectId !== undefined) out.project_id = set.projectId
  if (set.attachHandleId !== undefined) out.attach_handle_id = set.attachHandleId
  if (set.deployableId !== undefined) out.deployable_id = set.deployableId
  if (set.bindId !== undefined) out.bind_id = set.bindId
  return out
}

/**
 * Deletes ARQs by uuid or by instance and returns the deleted rows (in id order), so that the
 * caller can free the handles they held (`attachHandleId`); this does not. Run it in a transaction.
 */
export async function deleteArqs(
  db: Kysely<Database>,
  target: { uuids: readonly string[] } | { instanceUuid: string },
): Promise<Arq[]> {
  const rows: AcceleratorRequestRow[] = []
  if ('uuids' in target) {
    for (const chunk of chunks([...new Set(target.uuids)])) {
      rows.push(
        ...(await db
          .selectFrom('accelerator_requests')
          .selectAll()
          .where('uuid', 'in', chunk)
          .execute()),
      )
    }
  } else {
    const sel = db.selectFrom('accelerator_requests').selectAll()
    rows.push(...(await sel.where('instance_uuid', '=', target.instanceUuid).execute()))
  }
  for (const chunk of chunks(rows.map((r) => r.id))) {
    await db.deleteFrom('accelerator_requests').where('id', 'in', chunk).execute()
  }
  return rows.sort((a, b) => a.id - b.id).map(toArq)
}

/** ARQs of `instanceUuid` other than `except` that hold a binding (BindStarted or Bound). */
export async function listBoundArqsOfInstance(
  db: ReadDb,
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
export async function updateArqHandle(
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

/** Requests in `state` last changed before `cutoff`, oldest first, at most `limit`. */
async function listStale(
  db: ReadDb,
  state: ArqState,
  cutoff: string,
  limit: number,
): Promise<Arq[]> {
  const rows = await db
    .selectFrom('accelerator_requests')
    .selectAll()
    .where('state', '=', state)
    .where((eb) =>
      eb.or([
        eb('updated_at', '<', cutoff),
        eb.and([eb('updated_at', 'is', null), eb('created_at', '<', cutoff)]),
      ]),
    )
    .orderBy('id')
    .limit(limit)
    .execute()
  return rows.map(toArq)
}

/** ARQs stuck in BindStarted since before `cutoff` (a conductor died, or an agent never answered). */
export function listStaleBinds(db: ReadDb, cutoff: string, limit = 500): Promise<Arq[]> {
  return listStale(db, 'BindStarted', cutoff, limit)
}

/** Requests left Deleting since before `cutoff` (a conductor died mid-delete, or an agent failed). */
export function listStaleDeletes(db: ReadDb, cutoff: string, limit = 500): Promise<Arq[]> {
  return listStale(db, 'Deleting', cutoff, limit)
}
