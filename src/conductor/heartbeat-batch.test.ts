/**
 * Heartbeat coalescing on every database: concurrent heartbeats share one statement and each row
 * is refreshed; `inventoryCurrent` is true only for a stored hash equal to the beat's, also when
 * the hash is nulled while the batch waits for its statement; first sight and a new version are
 * written alone; a failing statement fails the batch's callers; N heartbeats cost one statement.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { DatabaseHandle } from '../db/core/connection.js'
import { createGroupCommitter } from '../db/core/group-commit.js'
import { deleteReportHashes, updateHeartbeat, updateReportHash } from '../db/service-rows.js'
import { listServices } from '../db/reads/service-reads.js'
import { UnavailableError } from '../domain/errors.js'
import { noopLogger } from '../domain/logger.js'
import { testDialects } from '../../test/support/db.js'
import { createHeartbeatBatcher } from './heartbeat-batch.js'
import { createConductor } from './conductor.js'

const T0 = '2026-11-25T06:00:00.000000+00:00'
const T1 = '2026-11-25T06:00:10.000000+00:00'
const AGENT = 'cyborg-agent'
const host = (i: number) => `h${String(i).padStart(3, '0')}`
const clock = { now: () => new Date('2026-11-25T06:00:10Z') }

/** `handle` with every Kysely statement counted, and failing on demand (by query kind). */
function counted(handle: DatabaseHandle) {
  const counter = {
    statements: 0,
    fail: undefined as ((kind: string) => Error | undefined) | undefined,
  }
  const db = handle.db.withPlugin({
    transformQuery(args) {
      counter.statements++
      const err = counter.fail?.(args.node.kind)
      if (err) throw err
      return args.node
    },
    transformResult: async (args) => args.result,
  })
  return { handle: { ...handle, db }, counter }
}

/** Rows h000…h(n-1), version 1, last beat T0; h000 has report hash `hash-0`. */
async function seed(handle: DatabaseHandle, n: number) {
  for (let i = 0; i < n; i++)
    await updateHeartbeat(handle.db, { host: host(i), binary: AGENT, version: '1' }, T0)
  await updateReportHash(handle.db, host(0), 'hash-0', T0)
}

const byHost = async (handle: DatabaseHandle) =>
  new Map((await listServices(handle.db)).map((s) => [`${s.binary}@${s.host}`, s]))

for (const dialect of await testDialects()) {
  const { skip } = dialect

  await test(`heartbeat batch: answers and rows on ${dialect.name}`, { skip }, async () => {
    const db = await dialect.create()
    const { handle, counter } = counted(db)
    const committer = createGroupCommitter(handle, { intervalMs: 0, maxBatch: 64 })
    const batcher = createHeartbeatBatcher({ db: handle, committer, now: () => T1 })
    try {
      await seed(db, 20)
      await updateReportHash(db.db, host(1), 'hash-1', T0)
      // 20 known agents (h000 and h001 confirm their hash, h001's is stale; h002 has none), a
      // first sight, a new version, and an api service: one batch.
      const answers = await Promise.all([
        batcher.beat({ host: host(0), binary: AGENT, version: '1', reportHash: 'hash-0' }),
        batcher.beat({ host: host(1), binary: AGENT, version: '1', reportHash: 'other' }),
        batcher.beat({ host: host(2), binary: AGENT, version: '1', reportHash: 'hash-2' }),
        ...Array.from({ length: 16 }, (_, i) =>
          batcher.beat({ host: host(i + 3), binary: AGENT, version: '1' }),
        ),
        batcher.beat({ host: host(19), binary: AGENT, version: '2' }),
        batcher.beat({ host: 'new', binary: AGENT, version: '1', reportHash: 'hash-new' }),
        batcher.beat({ host: host(0), binary: 'cyborg-api', version: '1' }),
      ])
      assert.deepEqual(answers, [true, false, false, ...Array<boolean>(19).fill(false)])
      assert.equal(batcher.stats().batches, 1, 'one batch statement')
      const rows = await byHost(db)
      assert.equal(rows.size, 22)
      for (const [key, s] of rows) assert.equal(s.lastSeen, T1, `${key} refreshed`)
      assert.equal(rows.get(`${AGENT}@${host(0)}`)!.reportHash, 'hash-0')
      assert.equal(rows.get(`${AGENT}@${host(1)}`)!.reportHash, 'hash-1', 'a stale hash stays')
      assert.equal(rows.get(`${AGENT}@${host(19)}`)!.version, '2', 'a new version is written')
      const created = rows.get(`${AGENT}@new`)!
      assert.deepEqual([created.version, created.createdAt, created.reportHash], ['1', T1, null])
      assert.equal(rows.get(`cyborg-api@${host(0)}`)!.createdAt, T1, 'first sight of the api')

      // A DB error fails every caller of the batch; the next batch works again.
      const boom = new Error('database went away')
      counter.fail = (kind) => (kind === 'UpdateQueryNode' ? boom : undefined)
      const failed = await Promise.allSettled(
        [1, 2, 3].map((i) => batcher.beat({ host: host(i), binary: AGENT, version: '2' })),
      )
      assert.deepEqual(
        failed.map((r) => (r.status === 'rejected' ? r.reason : r.value) as unknown),
        [boom, boom, boom],
      )
      counter.fail = undefined
      assert.equal(
        await batcher.beat({ host: host(0), binary: AGENT, version: '1', reportHash: 'hash-0' }),
        true,
      )
      // A second beat of the same agent in one batch is written alone, after the first.
      const twice = await Promise.all([
        batcher.beat({ host: host(0), binary: AGENT, version: '1', reportHash: 'hash-0' }),
        batcher.beat({ host: host(0), binary: AGENT, version: '1', reportHash: 'nope' }),
      ])
      assert.deepEqual(twice, [true, false])
      await batcher.close()
      await assert.rejects(
        batcher.beat({ host: 'x', binary: AGENT, version: '1' }),
        UnavailableError,
      )
    } finally {
      await batcher.close()
      await committer.close()
      await db.close()
    }
  })

  await test(
    `heartbeat batch: a hash nulled while the batch waits answers false on ${dialect.name}`,
    { skip },
    async () => {
      const db = await dialect.create()
      const committer = createGroupCommitter(db, { intervalMs: 0, maxBatch: 64 })
      const batcher = createHeartbeatBatcher({ db, committer, now: () => T1 })
      try {
        await seed(db, 4)
        await updateReportHash(db.db, host(1), 'hash-1', T0)
        let release!: () => void
        const gate = new Promise<void>((r) => (release = r))
        let nulled!: () => void
        const hashGone = new Promise<void>((r) => (nulled = r))
        // The lease sweep's fence, in a transaction that holds h000's row (the connection, on
        // SQLite) until released: the batch statement waits for it, then sees the null.
        const sweep = db.db.transaction().execute(async (trx) => {
          await deleteReportHashes(trx, [host(0)])
          nulled()
          await gate
        })
        await hashGone
        const answers = Promise.all([
          batcher.beat({ host: host(0), binary: AGENT, version: '1', reportHash: 'hash-0' }),
          batcher.beat({ host: host(1), binary: AGENT, version: '1', reportHash: 'hash-1' }),
          batcher.beat({ host: host(2), binary: AGENT, version: '1' }),
        ])
        await new Promise((r) => setTimeout(r, 100))
        release()
        await sweep
        assert.deepEqual(await answers, [false, true, false])
        const rows = await byHost(db)
        assert.equal(rows.get(`${AGENT}@${host(0)}`)!.reportHash, null, 'the fence holds')
        assert.equal(rows.get(`${AGENT}@${host(0)}`)!.lastSeen, T1, 'the beat is recorded')
        assert.equal(rows.get(`${AGENT}@${host(1)}`)!.lastSeen, T1)
        assert.equal(rows.get(`${AGENT}@${host(3)}`)!.lastSeen, T0, 'no beat, no refresh')
      } finally {
        await batcher.close()
        await committer.close()
        await db.close()
      }
    },
  )

  await test(
    `heartbeat batch: N heartbeats cost one statement on ${dialect.name}`,
    { skip },
    async () => {
      const db = await dialect.create()
      const { handle, counter } = counted(db)
      try {
        await seed(db, 200)
        const statementsFor = async (coalesce: boolean, n: number, version = '1') => {
          const conductor = createConductor(
            { db: handle, log: noopLogger, clock },
            { reapIntervalMs: 0, heartbeats: coalesce ? { maxBatch: 256 } : false },
          )
          try {
            const before = counter.statements
            const answers = await Promise.all(
              Array.from({ length: n }, (_, i) =>
                conductor.heartbeat({
                  host: host(i),
                  binary: AGENT,
                  version,
                  ...(i === 0 ? { inventoryHash: 'hash-0' } : {}),
                }),
              ),
            )
            // The hash matches (a new version is written along, as before coalescing).
            assert.deepEqual(answers[0], { inventoryCurrent: true })
            assert.ok(answers.slice(1).every((a) => a === undefined))
            return counter.statements - before
          } finally {
            await conductor.stop()
          }
        }
        assert.equal(await statementsFor(true, 10), 1)
        assert.equal(await statementsFor(true, 200), 1)
        const alone = await statementsFor(false, 200)
        assert.ok(alone >= 200, `uncoalesced: ${alone} statements for 200 heartbeats`)
        // All 200 with a new version: the batch statement, one SELECT, then each alone.
        const changed = await statementsFor(true, 200, '2')
        assert.ok(changed >= 202, `${changed} statements`)
        for (const s of (await listServices(db.db)).filter((r) => r.binary === AGENT))
          assert.equal(s.version, '2', `${s.host} has the new version`)
      } finally {
        await db.close()
      }
    },
  )
}
