/**
 * The outbox on every database: events written in a transaction that rolls back go with it (also
 * a failing write's own inside a group-commit batch whose other writes commit); unsent events come
 * back in id order with their payloads, are stamped sent once, and sent ones past retention are
 * deleted; the relay lock has one holder at a time (across connections on PostgreSQL and MariaDB).
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { testDialects } from '../../../test/support/db.js'
import { agentEvent } from '../../domain/events.js'
import { ConflictError } from '../../domain/errors.js'
import { openDatabase } from '../core/connection.js'
import {
  deleteSentEvents,
  hasUnsentEvents,
  insertEvents,
  listEvents,
  listUnsentEvents,
  markEventsSent,
  withEventRelayLock,
} from './events.js'
import { createGroupCommitter } from '../core/group-commit.js'

const T0 = '2026-11-25T06:00:00.000000+00:00'
const T1 = '2026-11-25T07:00:00.000000+00:00'
const T2 = '2026-11-25T08:00:00.000000+00:00'

const lost = (host: string, n: number) =>
  agentEvent(
    'lease_lost',
    { hostname: host, binary: 'cyborg-agent', reason: `silent ${n}`, devices: [`d-${n}`] },
    T0,
  )

for (const dialect of await testDialects()) {
  await test(`the events outbox on ${dialect.name}`, { skip: dialect.skip }, async () => {
    const db = await dialect.create()
    const second = dialect.name === 'sqlite' ? db : await openDatabase(db.url)
    const committer = createGroupCommitter(db, { intervalMs: 0, maxBatch: 8 })
    try {
      await assert.rejects(
        db.db.transaction().execute(async (trx) => {
          await insertEvents(trx, [lost('h0', 0)])
          throw new Error('abort')
        }),
        /abort/,
      )
      assert.deepEqual(await listEvents(db.db), [], 'a rolled-back transaction wrote no event')
      assert.equal(await hasUnsentEvents(db.db), false)

      // One batch: the failing write's events roll back to its savepoint, the others' commit.
      const [a, b, c] = [lost('h1', 1), lost('h2', 2), lost('h1', 3)]
      const batches = committer.stats().batches
      const settled = await Promise.allSettled([
        committer.run((trx) => insertEvents(trx, [a])),
        committer.run(async (trx) => {
          await insertEvents(trx, [b])
          throw new ConflictError('refused')
        }),
        committer.run((trx) => insertEvents(trx, [c])),
      ])
      assert.equal(committer.stats().batches, batches + 1, 'the three writes shared a batch')
      assert.deepEqual(
        settled.map((s) => s.status),
        ['fulfilled', 'rejected', 'fulfilled'],
      )
      const rows = await listUnsentEvents(db.db, 10)
      assert.deepEqual(
        rows.map((r) => r.uuid),
        [a.uuid, c.uuid],
      )
      assert.ok(rows[0]!.id < rows[1]!.id, 'in id order')
      const { uuid: _u, ...written } = a
      const { id: _i, uuid: _v, sentAt, ...read } = rows[0]!
      assert.deepEqual(read, written)
      assert.equal(sentAt, null)
      assert.deepEqual(rows[0]!.payload['cyborg_object.data'], {
        hostname: 'h1',
        binary: 'cyborg-agent',
        reason: 'silent 1',
        devices: ['d-1'],
      })

      // Many rows: unsent ones in id order, a page at a time; stamped once.
      const many = Array.from({ length: 620 }, (_, i) => lost(`h${i % 7}`, 10 + i))
      await committer.run((trx) => insertEvents(trx, many))
      const page = await listUnsentEvents(db.db, 100)
      assert.equal(page.length, 100)
      assert.deepEqual(
        page.map((e) => e.uuid),
        [a.uuid, c.uuid, ...many.slice(0, 98).map((e) => e.uuid)],
      )
      assert.equal(
        await markEventsSent(
          db.db,
          page.map((e) => e.id),
          T1,
        ),
        100,
      )
      assert.equal(await markEventsSent(db.db, [page[0]!.id], T2), 0, 'stamped once')
      assert.equal((await listUnsentEvents(db.db, 1000)).length, 522)
      const rest = await listUnsentEvents(db.db, 1000)
      await markEventsSent(
        db.db,
        rest.map((e) => e.id),
        T2,
      )
      assert.equal(await hasUnsentEvents(db.db), false)

      // Retention: only sent rows older than the cutoff go, oldest first, a bounded number a time.
      assert.equal(await deleteSentEvents(db.db, T1), 0)
      assert.equal(await deleteSentEvents(db.db, T2, 60), 60)
      assert.equal(await deleteSentEvents(db.db, T2), 40)
      const left = await listEvents(db.db, { limit: 10_000 })
      assert.equal(left.length, 522)
      assert.ok(left.every((e) => e.sentAt === T2))
      assert.equal(
        (await listEvents(db.db, { resourceUuid: 'h3', limit: 10_000 })).length,
        left.filter((e) => e.resourceUuid === 'h3').length,
      )

      // The relay lock: one holder; the other is told at once, and gets it once it is free.
      let inner: { value: string } | undefined = { value: 'unset' }
      const outer = await withEventRelayLock(db, async () => {
        inner = await withEventRelayLock(second, async () => 'second')
        return 'first'
      })
      assert.deepEqual(outer, { value: 'first' })
      assert.equal(inner, undefined, 'held elsewhere: skipped, not waited for')
      assert.deepEqual(await withEventRelayLock(second, async () => 'second'), {
        value: 'second',
      })
      await assert.rejects(
        withEventRelayLock(db, async () => {
          throw new Error('sink down')
        }),
        /sink down/,
      )
      assert.deepEqual(await withEventRelayLock(second, async () => 'free again'), {
        value: 'free again',
      })
    } finally {
      await committer.close()
      if (second !== db) await second.close()
      await db.close()
    }
  })
}
