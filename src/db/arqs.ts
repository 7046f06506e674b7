/**
 * Accelerator requests (ARQs): create, read, move through the state machine of src/domain/arq.ts
 * with one conditional UPDATE, delete; and claim or release the attach handle a bound ARQ holds.
 */
import { MysqlAdapter, SqliteAdapter, type Kysely, type Updateable } from 'kysely'
import { allowedFrom, type Arq, type ArqSpec, type ArqState } from '../domain/arq.js'
import { NotFoundError } from '../domain/errors.js'
import { newUuid } from '../domain/ids.js'
import type { AttachHandle } from '../domain/inventory.js'
import { toAttachHandle } from './attach-handles.js'
import type { DialectName } from './connection.js'
import { translateDbError } from './errors.js'
import { paginate, type PageOptions, type PageSpec } from './pagination.js'
import type { AcceleratorRequestRow, AcceleratorRequestsTable, Database } from './schema.js'

/** Rows per multi-row INSERT and ids per IN list: under every driver's parameter limit. */
const CHUNK = 500

const PAGE: PageSpec<'id'> = {
  table: 'accelerator_requests',
  keys: ['id'],
  nullable: [],
  notFoundCode: 'ARQ_NOT_FOUND',
}

/** Maps an `accelerator_requests` row to the domain type. */
export function toArq(row: AcceleratorRequestRow): Arq {
  return {
    id: row.id,
    uuid: row.uuid,
    state: row.state as ArqState,
    deviceProfileId: row.device_profile_id,
    deviceProfileGroupId: row.device_profile_group_id,
    projectId: row.project_id,
    hostname: row.hostname,
    deviceRpUuid: row.device_rp_uuid,
    instanceUuid: row.instance_uuid,
    attachHandleId: row.attach_handle_id,
    deployableId: row.deployable_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

/** Which database `db` (a root instance or a transaction) talks to. */
function dialectOf(db: Kysely<Database>): DialectName {
  const adapter = db.getExecutor().adapter
  return adapter instanceof SqliteAdapter ? 'sqlite' : adapter instanceof MysqlAdapter ? 'mysql' : 'postgres'
}

const chunks = <T>(items: readonly T[]): T[][] =>
  Array.from({ length: Math.ceil(items.length / CHUNK) }, (_, i) => items.slice(i * CHUNK, (i + 1) * CHUNK))

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
  for (const chunk of chunks(rows)) {
    try {
      await db.insertInto('accelerator_requests').values(chunk).execute()
    } catch (err) {
      throw translateDbError(err, {
        entity: 'accelerator request',
        unique: 'uuid',
        missingParent: 'device_profile_id',
        codes: { notFound: 'DEVICE_PROFILE_NOT_FOUND', conflict: 'ARQ_EXISTS' },
      })
    }
    const uuids = chunk.map((r) => r.uuid)
    const saved = await db.selectFrom('accelerator_requests').selectAll().where('uuid', 'in', uuids).execute()
    const byUuid = new Map(saved.map((r) => [r.uuid, r]))
    for (const u of uuids) out.push(toArq(byUuid.get(u)!))
  }
  return out
}

/** @throws NotFoundError with code ARQ_NOT_FOUND. */
export async function getArq(db: Kysely<Database>, uuid: string): Promise<Arq> {
  const row = await db.selectFrom('accelerator_requests').selectAll().where('uuid', '=', uuid).executeTakeFirst()
  if (!row) throw new NotFoundError(`accelerator request ${uuid} not found`, { code: 'ARQ_NOT_FOUND', details: { uuid } })
  return toArq(row)
}

/**
 * One ARQ, read with its row locked until the transaction ends (FOR UPDATE on PostgreSQL and
 * MariaDB; SQLite's one writer needs none), so a concurrent bind cannot change it meanwhile.
 * @throws NotFoundError with code ARQ_NOT_FOUND.
 */
export async function getArqForUpdate(db: Kysely<Database>, uuid: string): Promise<Arq> {
  const qb = db.selectFrom('accelerator_requests').selectAll().where('uuid', '=', uuid)
  const row = await (dialectOf(db) === 'sqlite' ? qb : qb.forUpdate()).executeTakeFirst()
  if (!row) throw new NotFoundError(`accelerator request ${uuid} not found`, { code: 'ARQ_NOT_FOUND', details: { uuid } })
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
export async function listArqs(db: Kysely<Database>, filter: ArqFilter = {}): Promise<Arq[]> {
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
}

/** The outcome of `transitionArqs`. */
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
export async function transitionArqs(
  db: Kysely<Database>,
  uuids: readonly string[],
  to: ArqState,
  options: { now: string; set?: ArqBinding },
): Promise<TransitionResult> {
  const from = [...allowedFrom(to)]
  const result: TransitionResult = { count: 0, moved: [] }
  if (from.length === 0) return result
  const values = { ...toColumns(options.set ?? {}), state: to, updated_at: options.now }
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
    .select('id')
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
  let qb = db.selectFrom('accelerator_requests').selectAll().where('id', 'in', ids)
  if (Number(res.numUpdatedRows) !== ids.length) {
    qb = qb.where('state', '=', to).where('updated_at', '=', values.updated_at)
  }
  return qb.execute()
}

function toColumns(set: ArqBinding): ArqUpdate {
  const out: ArqUpdate = {}
  if (set.hostname !== undefined) out.hostname = set.hostname
  if (set.deviceRpUuid !== undefined) out.device_rp_uuid = set.deviceRpUuid
  if (set.instanceUuid !== undefined) out.instance_uuid = set.instanceUuid
  if (set.projectId !== undefined) out.project_id = set.projectId
  if (set.attachHandleId !== undefined) out.attach_handle_id = set.attachHandleId
  if (set.deployableId !== undefined) out.deployable_id = set.deployableId
  return out
}

/**
 * Takes one free attach handle of a deployable (the lowest id not in use and not being taken by
 * another transaction), or returns undefined when none is free. PostgreSQL and MariaDB: SELECT …
 * FOR UPDATE SKIP LOCKED LIMIT 1, then UPDATE … WHERE id = ? AND in_use = 0, so concurrent binders
 * (even in other conductors) never wait for each other nor take the same handle. SQLite has one
 * writer at a time, so a single conditional UPDATE does. Run it in a transaction together with the
 * ARQ's own update; the claim is undone if that transaction rolls back.
 */
export async function claimHandle(
  db: Kysely<Database>,
  deployableId: number,
  options: { now?: string } = {},
): Promise<AttachHandle | undefined> {
  const set = options.now === undefined ? { in_use: 1 } : { in_use: 1, updated_at: options.now }
  const free = () =>
    db
      .selectFrom('attach_handles')
      .where('deployable_id', '=', deployableId)
      .where('in_use', '=', 0)
      .orderBy('id')
      .limit(1)
  if (dialectOf(db) === 'sqlite') {
    const row = await db
      .updateTable('attach_handles')
      .set(set)
      .where('id', '=', (eb) => eb.selectFrom(free().select('id').as('f')).select('f.id'))
      .where('in_use', '=', 0)
      .returningAll()
      .executeTakeFirst()
    return row && toAttachHandle(row)
  }
  // Outside a transaction the row lock ends at once; the conditional UPDATE still refuses a handle
  // taken meanwhile, and the loop tries the next one.
  for (;;) {
    const row = await free().selectAll().forUpdate().skipLocked().executeTakeFirst()
    if (!row) return undefined
    const res = await db
      .updateTable('attach_handles')
      .set(set)
      .where('id', '=', row.id)
      .where('in_use', '=', 0)
      .executeTakeFirst()
    if (Number(res.numUpdatedRows) === 1) return toAttachHandle({ ...row, ...set })
  }
}

/**
 * Marks a handle free again, unless an accelerator request still names it (so a late release can
 * never free a handle that another request has claimed meanwhile). Returns false when it was not
 * in use, does not exist, or is still named.
 */
export async function releaseHandle(
  db: Kysely<Database>,
  handleId: number,
  options: { now?: string } = {},
): Promise<boolean> {
  const set = options.now === undefined ? { in_use: 0 } : { in_use: 0, updated_at: options.now }
  const res = await db
    .updateTable('attach_handles')
    .set(set)
    .where('id', '=', handleId)
    .where('in_use', '=', 1)
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('accelerator_requests').select('id').where('attach_handle_id', '=', handleId))),
    )
    .executeTakeFirst()
  return Number(res.numUpdatedRows) === 1
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
      rows.push(...(await db.selectFrom('accelerator_requests').selectAll().where('uuid', 'in', chunk).execute()))
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
