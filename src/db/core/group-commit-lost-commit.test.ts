/**
 * A COMMIT whose answer is lost must not make a write run twice (issue 14): through a proxy that
 * cuts the connection right after (or right before) handing on a COMMIT, each write below makes
 * its row id inside the operation, so a second run would leave a second row.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { sql, type Kysely } from 'kysely'
import { startTcpProxy, type TcpProxy } from '../../../test/support/fuzz/tcp-proxy.js'
import { UnavailableError } from '../../domain/errors.js'
import { openDatabase, parseConnectionUrl, type DatabaseHandle } from './connection.js'
import { createGroupCommitter } from './group-commit.js'
import type { Database } from './schema.js'
import { testDialects, type TestDatabase } from '../../../test/support/db.js'

/** `url` with its host and port replaced by the proxy's. */
const viaProxy = (url: string, port: number) =>
  url.replace(/^([a-z0-9+]+:\/\/(?:[^@/]*@)?)[^/]*/i, `$1127.0.0.1:${port}`)

/** A write that is not idempotent: its id is made inside, so each run adds a row. */
const insertRow = (tag: string) => async (trx: Kysely<Database>) => {
  const id = randomUUID()
  await sql`INSERT INTO lost_rows (id, tag) VALUES (${id}, ${tag})`.execute(trx)
  return id
}

async function rowIds(db: Kysely<Database>, tag: string): Promise<string[]> {
  const { rows } = await sql<{ id: string }>`SELECT id FROM lost_rows WHERE tag = ${tag}`.execute(
    db,
  )
  return rows.map((r) => r.id)
}

async function markerCount(db: Kysely<Database>): Promise<number> {
  return (await db.selectFrom('commit_markers').select('id').execute()).length
}

for (const dialect of await testDialects()) {
  const skip =
    dialect.name === 'sqlite'
      ? 'SQLite runs in this process: there is no connection to lose'
      : dialect.skip
  await test(
    `group commit: a lost COMMIT answer runs no write twice on ${dialect.name}`,
    { skip },
    async (t) => {
      const base: TestDatabase = await dialect.create()
      const target = parseConnectionUrl(base.url)
      const proxy: TcpProxy = await startTcpProxy({ host: target.host!, port: target.port! })
      /** A fresh pool through the proxy per case, so that no idle connection outlives a case. */
      const open = (poolSize = 2): Promise<DatabaseHandle> =>
        openDatabase(viaProxy(base.url, proxy.port), { poolSize })
      await sql`CREATE TABLE lost_rows (id VARCHAR(36) PRIMARY KEY, tag VARCHAR(64) NOT NULL)`.execute(
        base.db,
      )
      try {
        await t.test(
          'a lone write whose answer is lost resolves with its value, written once',
          async () => {
            const handle = await open()
            const gc = createGroupCommitter(handle, { intervalMs: 0, maxBatch: 10 })
            try {
              proxy.cutAtNextCommit('after-commit')
              const id = await gc.run(insertRow('lone-after'))
              assert.equal(proxy.cuts, 1)
              assert.deepEqual(await rowIds(base.db, 'lone-after'), [id])
            } finally {
              await gc.close()
              await handle.close()
            }
            assert.equal(await markerCount(base.db), 0, 'settled markers are swept at close')
          },
        )

        /** Four writes in one batch, the connection cut at `cut`: each written once, each caller its id. */
        const batchOfFour = async (cut: 'after-commit' | 'before-commit', cutsSoFar: number) => {
          const handle = await open()
          const gc = createGroupCommitter(handle, { intervalMs: 10, maxBatch: 10 })
          try {
            proxy.cutAtNextCommit(cut)
            const tags = [0, 1, 2, 3].map((i) => `batch-${cut}-${i}`)
            const ids = await Promise.all(tags.map((tag) => gc.run(insertRow(tag))))
            assert.equal(gc.stats().batches, 1)
            assert.equal(proxy.cuts, cutsSoFar)
            for (const [i, tag] of tags.entries())
              assert.deepEqual(await rowIds(base.db, tag), [ids[i]])
          } finally {
            await gc.close()
            await handle.close()
          }
          assert.equal(await markerCount(base.db), 0)
        }

        await t.test(
          'a batch whose answer is lost resolves each write with its value, written once',
          () => batchOfFour('after-commit', 2),
        )

        await t.test(
          'a batch cut before its COMMIT runs each write again alone, written once',
          () => batchOfFour('before-commit', 3),
        )

        await t.test('a lone write cut before its COMMIT fails and leaves nothing', async () => {
          const handle = await open()
          const gc = createGroupCommitter(handle, { intervalMs: 0, maxBatch: 10 })
          try {
            proxy.cutAtNextCommit('before-commit')
            const err = await gc.run(insertRow('lone-before')).then(
              () => assert.fail('expected the lost connection to fail the write'),
              (e: unknown) => e,
            )
            assert.ok(
              !(err instanceof UnavailableError),
              `a known rollback is not an unknown outcome: ${String(err)}`,
            )
            assert.equal(proxy.cuts, 4)
            assert.deepEqual(await rowIds(base.db, 'lone-before'), [])
          } finally {
            await gc.close()
            await handle.close()
          }
          assert.equal(await markerCount(base.db), 0)
        })

        await t.test(
          'an unreachable database leaves the outcome unknown: UnavailableError, no second run',
          async () => {
            // One connection: once it is cut, asking about the outcome needs a new one, which is refused.
            const handle = await open(1)
            const gc = createGroupCommitter(handle, { intervalMs: 10, maxBatch: 10 })
            try {
              proxy.cutAtNextCommit('after-commit', { thenRefuse: true })
              const settled = await Promise.allSettled([
                gc.run(insertRow('unknown-0')),
                gc.run(insertRow('unknown-1')),
              ])
              for (const s of settled) {
                assert.ok(
                  s.status === 'rejected' && s.reason instanceof UnavailableError,
                  `got ${JSON.stringify(s)}`,
                )
                assert.match((s.reason as Error).message, /outcome is unknown.*may have landed/)
              }
              proxy.refuse = false
              // The COMMIT did land: each write is there once, and was not run again.
              for (const tag of ['unknown-0', 'unknown-1'])
                assert.equal((await rowIds(base.db, tag)).length, 1)
            } finally {
              proxy.refuse = false
              await gc.close()
              await handle.close()
            }
          },
        )
      } finally {
        await proxy.close()
        await base.close()
      }
    },
  )
}
