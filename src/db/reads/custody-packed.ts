/**
 * `cyborg custody verify`'s page reader on PostgreSQL (issue 28): the 21 hashed columns of a
 * record come packed into one text per row, so that the pg driver decodes 4 fields a record
 * instead of 24 and no object of every field is built (decoding was about 2/3 of the walk's CPU;
 * docs/performance.md). The hash is still computed in JavaScript over the canonical JSON of the
 * unpacked values (custodyHashOfValues): the database only joins the stored columns, it never
 * builds what is hashed.
 *
 * The values are joined with \x1f (concat_ws leaves NULLs out), and a second column, an integer,
 * has bit i set when column i is NULL. A row splits back into exactly as many values as it has
 * non-NULL columns unless some value holds \x1f itself; such a row is read again whole, the
 * ordinary way, so a value can never be misread: the unpacked values are the stored ones, or the
 * row is not used.
 */
import { sql } from 'kysely'
import {
  HASHED_FIELDS,
  type PackedCustodyRecord,
  type VerifiableCustodyRecord,
} from '../../domain/custody/custody.js'
import type { ReadDb } from '../core/connection.js'
import { toFields } from './custody-rows.js'

const snake = (field: string) => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)

/** Every column a record's hash covers, in hashing order (src/domain/custody/custody.ts). */
export const PACKED_COLUMNS: readonly string[] = ['uuid', 'kind', ...HASHED_FIELDS.map(snake)]
const UUID = 0
const KIND = 1
const DETAIL = PACKED_COLUMNS.indexOf('detail')

const SEPARATOR = '\x1f'

const packed = sql.raw(`concat_ws(chr(31), ${PACKED_COLUMNS.map((c) => `"${c}"`).join(', ')})`)
const nullBits = sql.raw(
  PACKED_COLUMNS.map((c, i) => `(case when "${c}" is null then ${2 ** i} else 0 end)`).join(' + '),
)

/**
 * The stored values of a packed text and its NULL bits, or undefined when the text does not split
 * into one value per non-NULL column.
 */
export function unpackCustody(text: string, nulls: number): (string | null)[] | undefined {
  const parts = text.split(SEPARATOR)
  const values: (string | null)[] = new Array<string | null>(PACKED_COLUMNS.length)
  let next = 0
  for (let i = 0; i < values.length; i++) values[i] = (nulls >>> i) & 1 ? null : parts[next++]!
  return next === parts.length ? values : undefined
}

/** One sealed record read whole (a row whose packed text did not unpack). */
async function readWhole(db: ReadDb, seq: number): Promise<VerifiableCustodyRecord> {
  const r = await db
    .selectFrom('custody_records')
    .selectAll()
    .where('seq', '=', seq)
    .executeTakeFirstOrThrow()
  return { ...toFields(r), seq, prevHash: r.prev_hash ?? '', hash: r.hash ?? '' }
}

/** The sealed records after `afterSeq` through `throughSeq`, at most `limit`: PostgreSQL only. */
export async function listSealedCustodyPacked(
  db: ReadDb,
  range: { afterSeq: number; throughSeq?: number | undefined },
  limit: number,
): Promise<VerifiableCustodyRecord[]> {
  let qb = db
    .selectFrom('custody_records')
    .select(['seq', 'prev_hash', 'hash', packed.as('packed'), nullBits.as('nulls')])
    .where('seq', '>', range.afterSeq)
  if (range.throughSeq !== undefined) qb = qb.where('seq', '<=', range.throughSeq)
  const rows = await qb.orderBy('seq').limit(limit).execute()
  const out: VerifiableCustodyRecord[] = []
  for (const r of rows) {
    const seq = Number(r.seq)
    const values = unpackCustody(r.packed as string, Number(r.nulls))
    // uuid and kind are NOT NULL: a null there is a row to read whole, as it is.
    if (values === undefined || values[UUID] === null || values[KIND] === null) {
      out.push(await readWhole(db, seq))
      continue
    }
    const record: PackedCustodyRecord = {
      seq,
      prevHash: r.prev_hash ?? '',
      hash: r.hash ?? '',
      uuid: values[UUID]!,
      kind: values[KIND]! as PackedCustodyRecord['kind'],
      detail: values[DETAIL] ?? null,
      values,
    }
    out.push(record)
  }
  return out
}
