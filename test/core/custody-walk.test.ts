/**
 * The custody walk's page reader on every database (issue 28): on PostgreSQL the columns come
 * packed into one text a row (src/db/reads/custody-packed.ts). Records whose values hold the packing's
 * own tag and separator characters, quotes, backslashes, new lines and non-ASCII text walk to the
 * same verdict and head as the whole-column reader, and an edit is named at its seq by both, also
 * when the edited value holds the separator (a row read again whole).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createCustodySealer } from '../../src/conductor/outbox/custody-sealer.js'
import { appendCustodyRecords } from '../../src/db/custody.js'
import { PACKED_COLUMNS, unpackCustody } from '../../src/db/reads/custody-packed.js'
import {
  listSealedCustody,
  listSealedCustodyWhole,
  type SeqRange,
} from '../../src/db/reads/custody-walk.js'
import { CustodyKind, type CustodyFields } from '../../src/domain/custody/custody.js'
import { createCustodyVerifier } from '../../src/domain/custody/custody-verify.js'
import { noopLogger } from '../../src/domain/logger.js'
import type { ReadDb } from '../../src/db/core/connection.js'
import { testDialects, type TestDatabase } from '../support/db.js'

const uuid = (n: number) => `c0570d10-0000-4000-8000-${String(n).padStart(12, '0')}`
const AT = '2026-11-28T00:00:00.000000+00:00'

/** Awkward values: the packing's characters, JSON's escapes, and text beyond ASCII. */
const AWKWARD = ['a\x1fb', '\x01', '\x02x', '', 'quote " and \\ back', 'line\nbreak', 'héllo ☃']

function record(n: number): CustodyFields {
  const odd = (i: number) => AWKWARD[(n + i) % AWKWARD.length]!
  return {
    uuid: uuid(n),
    kind: CustodyKind.Allocation,
    allocationUuid: null,
    arqUuid: uuid(1000 + n),
    deviceUuid: null,
    deployableUuid: null,
    handleUuid: null,
    deviceSerial: odd(0),
    hostname: odd(1),
    projectId: odd(2),
    userId: n % 2 === 0 ? null : odd(3),
    instanceUuid: uuid(2000 + n),
    allocatedVia: 'standalone_v2',
    boundAt: AT,
    releasedAt: AT,
    cleanMethod: null,
    cleanResult: null,
    cleanEvidenceSha256: null,
    cleanedAt: null,
    detail: n % 3 === 0 ? `{"note":"${n}"}` : null,
    createdAt: AT,
  }
}

type Reader = (db: ReadDb, range: SeqRange, limit: number) => ReturnType<typeof listSealedCustody>

async function walk(db: ReadDb, read: Reader) {
  const verifier = createCustodyVerifier({})
  let afterSeq = 0
  for (;;) {
    const page = await read(db, { afterSeq }, 4)
    if (page.length === 0 || !verifier.push(page)) break
    afterSeq = page.at(-1)!.seq
  }
  return verifier.result()
}

void describe('unpackCustody', () => {
  it('gives back every column, null or text, and refuses what is not a whole row', () => {
    const values = PACKED_COLUMNS.map((_, i) => (i % 3 === 0 ? null : i === 4 ? '' : `v${i}`))
    const packed = values.filter((v) => v !== null).join('\x1f')
    const nulls = values.reduce<number>((bits, v, i) => bits + (v === null ? 2 ** i : 0), 0)
    assert.deepEqual(unpackCustody(packed, nulls), values)
    assert.equal(unpackCustody(`${packed}\x1fextra`, nulls), undefined)
    assert.equal(unpackCustody(packed, nulls - 1), undefined)
  })
})

for (const dialect of await testDialects()) {
  void describe(`custody walk on ${dialect.name}`, { skip: dialect.skip }, () => {
    let db: TestDatabase
    before(async () => {
      db = await dialect.create()
      await appendCustodyRecords(
        db.db,
        Array.from({ length: 21 }, (_, i) => record(i + 1)),
      )
      const sealer = createCustodySealer({ db, log: noopLogger, clock: { now: () => new Date() } })
      assert.equal(await sealer.drain(), 21)
      await sealer.stop()
    })
    after(() => db?.close())

    it('walks awkward values to the same head as the whole-column reader', async () => {
      const packed = await walk(db.db, listSealedCustody)
      const whole = await walk(db.db, listSealedCustodyWhole)
      assert.equal(packed.ok, true, JSON.stringify(packed.broken))
      assert.equal(packed.records, 21)
      assert.deepEqual(packed.head, whole.head)
    })

    it('names an edited record, also one edited to hold the separator', async () => {
      for (const [seq, hostname] of [
        [5, 'edited'],
        [3, 'edited\x1fagain'],
      ] as const) {
        await db.db
          .updateTable('custody_records')
          .set({ hostname })
          .where('seq', '=', seq)
          .execute()
        for (const read of [listSealedCustody, listSealedCustodyWhole]) {
          const r = await walk(db.db, read)
          assert.equal(r.ok, false)
          assert.deepEqual([r.broken?.seq, r.broken?.reason], [seq, 'hash_mismatch'])
        }
      }
    })
  })
}
