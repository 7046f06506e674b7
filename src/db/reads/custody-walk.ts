/**
 * Walking the sealed custody chain (docs/custody.md): pages of records in seq order, one query a
 * page, optionally within a seq range, so that `cyborg custody verify` can walk two halves of a
 * long chain side by side (src/main/commands/custody-verify.ts, src/domain/custody/custody-segments.ts). Read-only.
 */
import type { KeyObject } from 'node:crypto'
import { type VerifiableCustodyRecord } from '../../domain/custody/custody.js'
import {
  createCustodyVerifier,
  type CustodyVerifyResult,
} from '../../domain/custody/custody-verify.js'
import { dialectOf, type ReadDb } from '../core/connection.js'
import { getLatestCheckpoint, toFields } from './custody-rows.js'
import { listSealedCustodyPacked } from './custody-packed.js'

/** A seq range: after `afterSeq`, through `throughSeq` (no end when undefined). */
export interface SeqRange {
  afterSeq: number
  throughSeq?: number | undefined
}

/**
 * The sealed records of `range`, in seq order, at most `limit` (the verifier's pages). On
 * PostgreSQL the columns come packed into one text a row (custody-packed.ts: a quarter of the
 * decoding); the records are the same.
 */
export async function listSealedCustody(
  db: ReadDb,
  range: SeqRange,
  limit: number,
): Promise<VerifiableCustodyRecord[]> {
  if (dialectOf(db) === 'postgres') return listSealedCustodyPacked(db, range, limit)
  return listSealedCustodyWhole(db, range, limit)
}

/** The same as listSealedCustody, every column read as such (any dialect). */
export async function listSealedCustodyWhole(
  db: ReadDb,
  range: SeqRange,
  limit: number,
): Promise<VerifiableCustodyRecord[]> {
  let qb = db.selectFrom('custody_records').selectAll().where('seq', '>', range.afterSeq)
  if (range.throughSeq !== undefined) qb = qb.where('seq', '<=', range.throughSeq)
  const rows = await qb.orderBy('seq').limit(limit).execute()
  return rows.map((r) => ({
    ...toFields(r),
    seq: Number(r.seq),
    prevHash: r.prev_hash ?? '',
    hash: r.hash ?? '',
  }))
}

/** The lowest and highest sealed seq and how many records are sealed; undefined when none is. */
export async function getSealedSeqRange(
  db: ReadDb,
): Promise<{ first: number; last: number; count: number } | undefined> {
  const row = await db
    .selectFrom('custody_records')
    .select((eb) => [
      eb.fn.min('seq').as('first'),
      eb.fn.max('seq').as('last'),
      eb.fn.count('seq').as('count'),
    ])
    .where('seq', 'is not', null)
    .executeTakeFirst()
  if (!row || row.first === null || row.last === null) return undefined
  return { first: Number(row.first), last: Number(row.last), count: Number(row.count) }
}

/**
 * Streams the sealed chain (or `range` of it) in pages of `pageSize` (by seq, one query per page).
 * The next page is asked for before the current one is handed out, so the database works while the
 * caller hashes.
 */
export async function* streamSealedCustody(
  db: ReadDb,
  pageSize = 10_000,
  range: SeqRange = { afterSeq: 0 },
): AsyncGenerator<VerifiableCustodyRecord[]> {
  const page = (afterSeq: number) => listSealedCustody(db, { ...range, afterSeq }, pageSize)
  let next: Promise<VerifiableCustodyRecord[]> | undefined = page(range.afterSeq)
  try {
    while (next) {
      const records: VerifiableCustodyRecord[] = await next
      if (records.length === 0) return
      next = records.length < pageSize ? undefined : page(records[records.length - 1]!.seq)
      yield records
    }
  } finally {
    // A caller that stopped early (a broken chain) leaves the prefetched page unread.
    next?.catch(() => undefined)
  }
}

export interface VerifyStoredOptions {
  pageSize?: number | undefined
  publicKey?: KeyObject | undefined
  /** Only this part of the chain; with `segment`, a part that does not start it. */
  range?: SeqRange | undefined
  segment?: boolean | undefined
}

/**
 * Verifies the stored chain: the newest checkpoint first (where a pruned chain starts), then every
 * sealed record in seq order, `pageSize` at a time (one query per page), stopping at the first
 * break. Unsealed records are not part of the chain yet.
 */
export async function verifyStoredCustody(
  db: ReadDb,
  options: VerifyStoredOptions = {},
): Promise<CustodyVerifyResult> {
  const verifier = createCustodyVerifier({
    anchor: options.segment ? undefined : await getLatestCheckpoint(db),
    publicKey: options.publicKey,
    segment: options.segment === true,
  })
  for await (const page of streamSealedCustody(db, options.pageSize, options.range))
    if (!verifier.push(page)) break
  return verifier.result()
}
