/**
 * Every migration up and down, one step at a time, with data, on SQLite, PostgreSQL and MariaDB
 * (docs/operations.md, "What a downgrade keeps"):
 * - from base to the latest, writing each migration's representative rows right after it
 *   (test/support/migration-seeds.ts); at each step the rows already there are kept and the schema
 *   works (a probe writes, reads back and deletes a request on a unit);
 * - back down to base: each step is first tried without --force, which is refused exactly for the
 *   migrations with a guard (naming the migration), then done; the rows of the tables that stay
 *   are kept, column for column, except what the downgrade documents (0005 deletes v1 attachments
 *   and frees their units, 0015 puts fenced units back in service);
 * - up again with the same rows: the database ends identical to the first climb, and the current
 *   code works on it (`db check` finds nothing, an agent report is ingested).
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { checkDatabase } from '../../src/db/core/db-check.js'
import { GUARDED_MIGRATIONS } from '../../src/db/core/migration-guards.js'
import { downgradeTo, migrationStatus, upgradeTo } from '../../src/db/core/migrate.js'
import type { DatabaseHandle } from '../../src/db/core/connection.js'
import { testDialects } from '../support/db.js'
import { ingestSnapshot } from '../support/ingest.js'
import { sampleDevice } from '../support/sample-inventory.js'
import { NOW, probe, project, SEEDS, snapshot, type Snapshot } from '../support/migration-seeds.js'

type Rows = NonNullable<ReturnType<Snapshot['get']>>['rows']

/** What a forced `down()` changes in the rows of the tables it keeps (docs: the downgrade table). */
const DOWN_EFFECTS: Readonly<Record<string, (before: Snapshot) => Snapshot>> = {
  '0005-v1-attachments': (before) => {
    const arqs = before.get('accelerator_requests')!
    const v1 = arqs.rows.filter((r) => r.device_profile_id === null)
    const freed = new Set(v1.map((r) => r.attach_handle_id))
    return edit(before, {
      accelerator_requests: arqs.rows.filter((r) => r.device_profile_id !== null),
      attach_handles: before
        .get('attach_handles')!
        .rows.map((h) => (freed.has(h.id) ? { ...h, in_use: 0 } : h)),
    })
  },
  '0015-reconfig-fence': (before) =>
    edit(before, {
      attach_handles: before
        .get('attach_handles')!
        .rows.map((h) => (h.reconfig_uuid !== null ? { ...h, in_use: 0 } : h)),
    }),
}

function edit(s: Snapshot, rows: Record<string, Rows>): Snapshot {
  const out: Snapshot = new Map(s)
  for (const [table, r] of Object.entries(rows)) out.set(table, { ...s.get(table)!, rows: r })
  return out
}

/** Every table of `after` that `before` had holds the same rows, on the columns both have. */
function assertKept(before: Snapshot, after: Snapshot, step: string): void {
  for (const [table, { columns, rows }] of after) {
    const was = before.get(table)
    if (!was) continue
    const common = columns.filter((c) => was.columns.includes(c))
    assert.deepEqual(project(rows, common), project(was.rows, common), `${table} after ${step}`)
  }
}

async function climb(handle: DatabaseHandle, all: readonly string[]): Promise<void> {
  for (const name of all) {
    const before = await snapshot(handle.db)
    assert.deepEqual((await upgradeTo(handle, name)).applied, [name])
    assertKept(before, await snapshot(handle.db), `applying ${name}`)
    await SEEDS[name]?.(handle.db)
    await probe(handle.db)
  }
}

for (const dialect of await testDialects()) {
  await test(
    `every migration up and down with data on ${dialect.name}`,
    { skip: dialect.skip },
    async (t) => {
      const handle = await dialect.create()
      try {
        const { all } = await migrationStatus(handle)
        await downgradeTo(handle, 'base')
        assert.equal((await migrationStatus(handle)).current, null)
        assert.deepEqual([...(await snapshot(handle.db)).keys()], [])

        await t.test('up from base, one step at a time, with rows after each', async () => {
          await climb(handle, all)
          assert.deepEqual(await checkDatabase(handle.db), [])
        })
        const top = await snapshot(handle.db)

        await t.test('down to base: refused exactly where data would go, then forced', async () => {
          const refused: string[] = []
          for (let i = all.length - 1; i >= 0; i--) {
            const name = all[i]!
            const to = i === 0 ? 'base' : all[i - 1]!
            const before = await snapshot(handle.db)
            let report
            try {
              report = await downgradeTo(handle, to)
              assert.deepEqual(report.dropped, [])
            } catch (err) {
              const e = err as Error & { code?: string }
              assert.equal(e.code, 'DOWNGRADE_LOSES_DATA', e.message)
              assert.match(e.message, new RegExp(`^cannot downgrade to ${to}: ${name}: \\d+ `))
              refused.push(name)
              assert.equal((await migrationStatus(handle)).current, name, 'nothing was undone')
              report = await downgradeTo(handle, to, { force: true })
              assert.deepEqual(
                report.dropped.map((d) => d.migration),
                [name],
              )
            }
            assert.deepEqual(report.undone, [name])
            const after = await snapshot(handle.db)
            assertKept(DOWN_EFFECTS[name]?.(before) ?? before, after, `undoing ${name}`)
            if (i > 0) await probe(handle.db)
          }
          assert.deepEqual(refused.sort(), [...GUARDED_MIGRATIONS].sort())
          assert.deepEqual([...(await snapshot(handle.db)).keys()], [])
        })

        await t.test(
          'up again: the same database as the first climb, and the code works on it',
          async () => {
            await climb(handle, all)
            const again = await snapshot(handle.db)
            assert.deepEqual([...again.keys()].sort(), [...top.keys()].sort())
            for (const [table, { columns, rows }] of top)
              assert.deepEqual(
                project(again.get(table)!.rows, columns),
                project(rows, columns),
                table,
              )
            assert.deepEqual(await checkDatabase(handle.db), [])
            await ingestSnapshot(
              handle.db,
              { host: 'walk-2', hash: 'h2', devices: [sampleDevice('walk-2', 0)] },
              { autoActivate: true, now: NOW },
            )
            assert.deepEqual(await checkDatabase(handle.db), [])
          },
        )
      } finally {
        await handle.close()
      }
    },
  )
}
