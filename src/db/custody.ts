/**
 * The custody ledger's table (migration 0013; docs/custody.md). Releases append their allocation
 * records inside their own transaction, one INSERT … SELECT for all the intervals a transaction
 * closes (the device, deployable and handle uuids and the device's serial are read by that same
 * statement); records are unsealed until the conductor's sealer gives them `seq`, `prev_hash` and
 * `hash` under the sealer lock (`withCustodyLock`), one UPDATE per batch. Reads for the API page
 * by id (src/db/reads/custody-reads.ts); the verifier streams sealed records by seq. A row's mapping
 * and the latest checkpoint are src/db/reads/custody-rows.ts.
 */
import { sql, type Kysely } from 'kysely'
import {
  CustodyKind,
  type AllocatedVia,
  type CustodyFields,
  sealCustody,
} from '../domain/custody/custody.js'
import type { Arq } from '../domain/arq.js'
import { dialectOf, type DatabaseHandle, type ReadDb } from './core/connection.js'
import type { Database } from './core/schema.js'
import { withLockRow } from './core/lock-row.js'
import { toFields, type CustodyRow as Row } from './reads/custody-rows.js'

/** Ids per IN list and rows per UPDATE: under every driver's parameter limit. */
const CHUNK = 500

/** One allocation interval that a release closes. */
export interface ClosedInterval {
  /** The record's uuid (made by the caller, so that a re-run batch writes the same). */
  uuid: string
  /** The request as it was while it held the handle (attachHandleId set). */
  arq: Arq
  via: AllocatedVia
  boundAt: string | null
  releasedAt: string
}

/** Transactions that appended records, until `takeCustodyWritten` asks (to wake the sealer). */
const written = new WeakSet<object>()

/**
 * Appends one allocation record per interval: a single INSERT … SELECT (UNION ALL), whatever the
 * number of intervals. The handle, deployable and device uuids, and the serial the device's
 * identity names (device_identities, `serial:…`), are read by the statement itself.
 */
export async function appendAllocationRecords(
  db: Kysely<Database>,
  intervals: readonly ClosedInterval[],
): Promise<void> {
  const held = intervals.filter((i) => i.arq.attachHandleId !== null)
  if (held.length === 0) return
  for (let i = 0; i < held.length; i += 100) {
    const rows = held.slice(i, i + 100).map(
      (c) => sql`select ${c.uuid}, ${CustodyKind.Allocation}, ${c.arq.uuid}, h.uuid, d.uuid,
        dev.uuid, (select max(substr(di.identity_key, 8)) from device_identities di
          where di.device_uuid = dev.uuid and di.identity_key like 'serial:%'),
        ${c.arq.hostname}, ${c.arq.projectId}, ${c.arq.instanceUuid}, ${c.via}, ${c.boundAt},
        ${c.releasedAt}, ${c.releasedAt}
        from (select 1 as one) one
        left join attach_handles h on h.id = ${c.arq.attachHandleId}
        left join deployables d on d.id = h.deployable_id
        left join devices dev on dev.id = d.device_id`,
    )
    await sql`insert into custody_records (uuid, kind, arq_uuid, handle_uuid, deployable_uuid,
      device_uuid, device_serial, hostname, project_id, instance_uuid, allocated_via, bound_at,
      released_at, created_at) ${sql.join(rows, sql` union all `)}`.execute(db)
  }
  written.add(db)
}

/** Appends records as given (checkpoints; later, clean and override records). */
export async function appendCustodyRecords(
  db: Kysely<Database>,
  records: readonly CustodyFields[],
): Promise<void> {
  if (records.length === 0) return
  for (let i = 0; i < records.length; i += 100)
    await db
      .insertInto('custody_records')
      .values(records.slice(i, i + 100).map(toRow))
      .execute()
  written.add(db)
}

/**
 * Appends a record that follows an allocation interval (a clean or an override): its
 * `device_serial`, `project_id` and `instance_uuid` are the interval's, read by the INSERT itself
 * (one statement).
 */
export async function appendFollowUpRecord(
  db: Kysely<Database>,
  record: Omit<CustodyFields, 'projectId' | 'instanceUuid' | 'deviceSerial'>,
): Promise<void> {
  const interval = record.allocationUuid ?? ''
  const of = (column: 'device_serial' | 'project_id' | 'instance_uuid') =>
    db.selectFrom('custody_records as a').select(`a.${column}`).where('a.uuid', '=', interval)
  await db
    .insertInto('custody_records')
    .values({
      ...toRow({ ...record, deviceSerial: null, projectId: null, instanceUuid: null }),
      device_serial: of('device_serial'),
      project_id: of('project_id'),
      instance_uuid: of('instance_uuid'),
    })
    .execute()
  written.add(db)
}

/** Many `appendFollowUpRecord`s in one statement (per 100): a batch of settled cleans. */
export async function appendFollowUpRecords(
  db: Kysely<Database>,
  records: readonly Omit<CustodyFields, 'projectId' | 'instanceUuid' | 'deviceSerial'>[],
): Promise<void> {
  if (records.length === 0) return
  const of = (interval: string, column: 'device_serial' | 'project_id' | 'instance_uuid') =>
    db.selectFrom('custody_records as a').select(`a.${column}`).where('a.uuid', '=', interval)
  for (let i = 0; i < records.length; i += 100)
    await db
      .insertInto('custody_records')
      .values(
        records.slice(i, i + 100).map((record) => {
          const interval = record.allocationUuid ?? ''
          return {
            ...toRow({ ...record, deviceSerial: null, projectId: null, instanceUuid: null }),
            device_serial: of(interval, 'device_serial'),
            project_id: of(interval, 'project_id'),
            instance_uuid: of(interval, 'instance_uuid'),
          }
        }),
      )
      .execute()
  written.add(db)
}

/** Whether `trx` appended records since the last call (and forgets it). */
export function takeCustodyWritten(trx: object): boolean {
  return written.delete(trx)
}

function toRow(f: CustodyFields) {
  return {
    uuid: f.uuid,
    kind: f.kind,
    allocation_uuid: f.allocationUuid,
    arq_uuid: f.arqUuid,
    device_uuid: f.deviceUuid,
    deployable_uuid: f.deployableUuid,
    handle_uuid: f.handleUuid,
    device_serial: f.deviceSerial,
    hostname: f.hostname,
    project_id: f.projectId,
    user_id: f.userId,
    instance_uuid: f.instanceUuid,
    allocated_via: f.allocatedVia,
    bound_at: f.boundAt,
    released_at: f.releasedAt,
    clean_method: f.cleanMethod,
    clean_result: f.cleanResult,
    clean_evidence_sha256: f.cleanEvidenceSha256,
    cleaned_at: f.cleanedAt,
    detail: f.detail,
    created_at: f.createdAt,
  }
}

/** The last sealed record's seq and hash; undefined when none is sealed. */
export async function getCustodyHead(
  db: ReadDb,
): Promise<{ seq: number; hash: string } | undefined> {
  const row = await db
    .selectFrom('custody_records')
    .select(['seq', 'hash'])
    .where('seq', 'is not', null)
    .orderBy('seq', 'desc')
    .limit(1)
    .executeTakeFirst()
  return row && row.seq !== null && row.hash !== null
    ? { seq: Number(row.seq), hash: row.hash }
    : undefined
}

/** Whether a record waits to be sealed (one indexed row at most). */
export async function hasUnsealedCustody(db: ReadDb): Promise<boolean> {
  const row = await db
    .selectFrom('custody_records')
    .select('id')
    .where('seq', 'is', null)
    .limit(1)
    .executeTakeFirst()
  return row !== undefined
}

/**
 * The oldest unsealed records, in id order, at most `limit`. On MariaDB the unsealed index is
 * named: its optimizer may otherwise scan the primary key for `ORDER BY id LIMIT` and read the
 * whole ledger on every pass (measured: every row, issue 28).
 */
export async function listUnsealedCustody(
  db: ReadDb,
  limit: number,
): Promise<(CustodyFields & { id: number })[]> {
  const rows =
    dialectOf(db as Kysely<Database>) === 'mysql'
      ? (
          await sql<Row>`
            select * from custody_records force index (custody_unsealed_idx)
            where seq is null order by id limit ${limit}`.execute(db)
        ).rows
      : await unsealedRows(db, limit)
  return rows.map((r) => ({ id: Number(r.id), ...toFields(r) }))
}

function unsealedRows(db: ReadDb, limit: number): Promise<Row[]> {
  return db
    .selectFrom('custody_records')
    .selectAll()
    .where('seq', 'is', null)
    .orderBy('id')
    .limit(limit)
    .execute()
}

/**
 * Gives records their place in the chain: one UPDATE per 500 (CASE by id), only where still
 * unsealed. Resolves with how many were sealed.
 */
export async function sealCustodyRecords(
  db: Kysely<Database>,
  sealed: readonly { id: number; seq: number; prevHash: string; hash: string }[],
): Promise<number> {
  let count = 0
  for (let i = 0; i < sealed.length; i += CHUNK) {
    const chunk = sealed.slice(i, i + CHUNK)
    const cases = (value: (s: (typeof chunk)[number]) => unknown) =>
      sql.join(
        chunk.map((s) => sql`when ${s.id} then ${value(s)}`),
        sql` `,
      )
    // `+ 0` types the parameter as a number on PostgreSQL (a CASE of bare parameters is text).
    const res = await sql`update custody_records set
      seq = case id ${cases((s) => sql`${s.seq} + 0`)} end,
      prev_hash = case id ${cases((s) => s.prevHash)} end,
      hash = case id ${cases((s) => s.hash)} end
      where id in (${sql.join(chunk.map((s) => s.id))}) and seq is null`.execute(db)
    count += Number(res.numAffectedRows ?? 0)
  }
  return count
}

/**
 * The last seq that pruning may delete: the highest sealed seq such that every sealed record up
 * to it was written before `cutoff`. Undefined when none may go.
 */
export async function getPrunableThrough(
  db: ReadDb,
  cutoff: string,
): Promise<{ seq: number; hash: string } | undefined> {
  const young = await db
    .selectFrom('custody_records')
    .select((eb) => eb.fn.min('seq').as('seq'))
    .where('seq', 'is not', null)
    .where('created_at', '>=', cutoff)
    .executeTakeFirst()
  let q = db
    .selectFrom('custody_records')
    .select(['seq', 'hash'])
    .where('seq', 'is not', null)
    .orderBy('seq', 'desc')
    .limit(1)
  if (young?.seq !== null && young?.seq !== undefined) q = q.where('seq', '<', Number(young.seq))
  const row = await q.executeTakeFirst()
  return row && row.seq !== null && row.hash !== null
    ? { seq: Number(row.seq), hash: row.hash }
    : undefined
}

/** The first sealed seq (where the stored chain starts), if any. */
export async function getCustodyTail(db: ReadDb): Promise<number | undefined> {
  const row = await db
    .selectFrom('custody_records')
    .select('seq')
    .where('seq', 'is not', null)
    .orderBy('seq')
    .limit(1)
    .executeTakeFirst()
  return row?.seq === null || row?.seq === undefined ? undefined : Number(row.seq)
}

/** Deletes sealed records up to seq `through`; resolves with how many. */
export async function deleteCustodyThrough(db: Kysely<Database>, through: number): Promise<number> {
  const res = await db
    .deleteFrom('custody_records')
    .where('seq', 'is not', null)
    .where('seq', '<=', through)
    .executeTakeFirst()
  return Number(res.numDeletedRows)
}

/** Runs `fn` holding the sealer lock (the `custody_sealer` row), or undefined when another sealer holds it (src/db/core/lock-row.ts). */
export function withCustodyLock<T>(
  handle: DatabaseHandle,
  fn: (db: Kysely<Database>) => Promise<T>,
): Promise<{ value: T } | undefined> {
  return withLockRow(handle, 'custody_sealer', fn)
}

/**
 * Seals the oldest unsealed records, at most `batchSize`, after the chain's head (one read of the
 * pending records, one of the head, one UPDATE batch); resolves how many. Call it holding the lock.
 */
export async function sealNextCustody(db: Kysely<Database>, batchSize: number): Promise<number> {
  const pending = await listUnsealedCustody(db, batchSize)
  if (pending.length === 0) return 0
  const sealed = sealCustody(await getCustodyHead(db), pending)
  await sealCustodyRecords(
    db,
    sealed.map((r, i) => ({ id: pending[i]!.id, seq: r.seq, prevHash: r.prevHash, hash: r.hash })),
  )
  return pending.length
}
