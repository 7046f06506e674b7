/**
 * `cyborg db` revisions (src/db/core/migrate.ts) on SQLite, PostgreSQL and MariaDB, and `db backup` on
 * SQLite (docs/operations.md):
 * - revisions by name, by number and `base`; an unknown one, an upgrade "to" a lower one, a
 *   downgrade "to" a higher one are refused, naming it, and change nothing;
 * - a database that a newer Cyborg upgraded (a migration this version does not know) is reported
 *   and never moved;
 * - a downgrade over several guarded migrations names each, newest first, and undoes nothing;
 * - the backup holds rows that are still only in the WAL.
 * The walk of every migration with data is test/core/migration-walk.test.ts.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { copyFile, mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { openDatabase } from '../../src/db/core/connection.js'
import {
  downgradeTo,
  migrateToLatest,
  migrationStatus,
  resolveRevision,
  upgradeTo,
} from '../../src/db/core/migrate.js'
import { GUARDED_MIGRATIONS } from '../../src/db/core/migration-guards.js'
import { testDialects } from '../support/db.js'
import { ingestSnapshot } from '../support/ingest.js'
import { NOW, SEEDS } from '../support/migration-seeds.js'
import { sampleDevice } from '../support/sample-inventory.js'

const rejectsWith = (code: string, pattern: RegExp) => (err: Error & { code?: string }) => {
  assert.equal(err.code, code, err.message)
  assert.match(err.message, pattern)
  return true
}

for (const dialect of await testDialects()) {
  await test(`db revisions on ${dialect.name}`, { skip: dialect.skip }, async (t) => {
    const handle = await dialect.create()
    try {
      const start = await migrationStatus(handle)
      const { all } = start
      const latest = all.at(-1)!
      assert.deepEqual(start, { all, applied: all, pending: [], current: latest, unknown: [] })

      await t.test('revisions by name, by number, base; unknown ones named', () => {
        assert.equal(resolveRevision(all, '0012-device-identities'), '0012-device-identities')
        assert.equal(resolveRevision(all, '12'), '0012-device-identities')
        assert.equal(resolveRevision(all, '0012'), '0012-device-identities')
        for (const base of ['base', '0', '0000']) assert.equal(resolveRevision(all, base), 'base')
        for (const bad of ['nope', '99', '0012-device'])
          assert.throws(
            () => resolveRevision(all, bad),
            rejectsWith(
              'INVALID_INPUT',
              /^unknown revision ".*": expected base, a number, or one of 0001-initial, /,
            ),
          )
      })

      await t.test('down and up by number; wrong directions refused', async () => {
        assert.deepEqual(await downgradeTo(handle, '13'), {
          undone: [
            '0019-events-resource-idx',
            '0018-handle-mdev-uuid',
            '0017-arq-bind-id',
            '0016-arq-bound-at',
            '0015-reconfig-fence',
            '0014-handle-cleaning',
          ],
          dropped: [],
        })
        const at13 = await migrationStatus(handle)
        assert.equal(at13.current, '0013-custody')
        assert.deepEqual(at13.pending, [
          '0014-handle-cleaning',
          '0015-reconfig-fence',
          '0016-arq-bound-at',
          '0017-arq-bind-id',
          '0018-handle-mdev-uuid',
          '0019-events-resource-idx',
        ])
        await assert.rejects(
          downgradeTo(handle, '14'),
          rejectsWith(
            'INVALID_INPUT',
            /^0014-handle-cleaning is above the current revision 0013-custody: use cyborg db upgrade --to 14$/,
          ),
        )
        await assert.rejects(
          upgradeTo(handle, '3'),
          rejectsWith(
            'INVALID_INPUT',
            /^0003-arqs is below the current revision 0013-custody: use cyborg db downgrade --to 3$/,
          ),
        )
        await assert.rejects(upgradeTo(handle, 'base'), /below the current revision/)
        assert.deepEqual(await upgradeTo(handle, '0013-custody'), { applied: [] })
        assert.deepEqual(await downgradeTo(handle, '13'), { undone: [], dropped: [] })
        assert.equal((await migrationStatus(handle)).current, '0013-custody', 'nothing moved')
        assert.deepEqual(await upgradeTo(handle, '14'), { applied: ['0014-handle-cleaning'] })
        assert.deepEqual(await upgradeTo(handle), {
          applied: [
            '0015-reconfig-fence',
            '0016-arq-bound-at',
            '0017-arq-bind-id',
            '0018-handle-mdev-uuid',
            '0019-events-resource-idx',
          ],
        })
      })

      await t.test('a migration this version does not know: reported, never moved', async () => {
        await sql`insert into cyborg_migrations (name, timestamp) values ('0099-future', ${NOW})`.execute(
          handle.db,
        )
        const s = await migrationStatus(handle)
        assert.deepEqual(s.unknown, ['0099-future'])
        assert.equal(s.current, latest)
        for (const move of [
          () => upgradeTo(handle),
          () => upgradeTo(handle, '2'),
          () => downgradeTo(handle, '2'),
        ])
          await assert.rejects(
            move,
            rejectsWith(
              'SCHEMA_NEWER',
              /does not know \(0099-future\): a newer Cyborg upgraded it/,
            ),
          )
        await sql`delete from cyborg_migrations where name = '0099-future'`.execute(handle.db)
      })

      await t.test(
        'a downgrade that would drop data names every migration, undoes none',
        async () => {
          for (const seed of Object.values(SEEDS)) await seed(handle.db)
          const err = await downgradeTo(handle, 'base').then(
            () => assert.fail('not refused'),
            (e: Error & { details?: { losses: { migration: string }[] } }) => e,
          )
          assert.match(
            err.message,
            RegExp(
              /^cannot downgrade to base: 0018-handle-mdev-uuid: 1 vGPU unit\(s\) held or cleaning .*; /
                .source +
                /0015-reconfig-fence: 1 unit\(s\) held by an unfinished program or configure .*; /
                  .source +
                /0001-initial: 2 device\(s\), 1 device profile\(s\), 2 accelerator request\(s\)\. /
                  .source +
                /Pass --force to drop them \(take a backup first\)$/.source,
            ),
          )
          assert.deepEqual(
            err.details?.losses.map((l) => l.migration),
            [...GUARDED_MIGRATIONS].reverse(),
          )
          assert.deepEqual((await migrationStatus(handle)).pending, [])
        },
      )
    } finally {
      await handle.close()
    }
  })
}

await test('db backup copies an SQLite database with what is still only in its WAL', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'cyborg-backup-'))
  try {
    const source = await openDatabase(`sqlite:///${dir}/live.db`)
    // No checkpoint: every row stays in live.db-wal until the connection closes.
    await sql`PRAGMA wal_autocheckpoint = 0`.execute(source.db)
    await migrateToLatest(source)
    await ingestSnapshot(
      source.db,
      { host: 'bk-1', hash: 'h', devices: [sampleDevice('bk-1', 0), sampleDevice('bk-1', 1)] },
      { autoActivate: true, now: NOW },
    )
    assert.ok((await stat(path.join(dir, 'live.db-wal'))).size > 0)
    // The main file alone does not even have the tables yet.
    await copyFile(path.join(dir, 'live.db'), path.join(dir, 'raw.db'))
    const raw = await openDatabase(`sqlite:///${dir}/raw.db`)
    assert.deepEqual(await raw.db.introspection.getTables(), [])
    await raw.close()

    assert.ok(source.backup, 'an SQLite handle can back up')
    await source.backup(path.join(dir, 'copy.db'))
    const copy = await openDatabase(`sqlite:///${dir}/copy.db`)
    const rows = await copy.db.selectFrom('devices').select('hostname').execute()
    assert.deepEqual(
      rows.map((r) => r.hostname),
      ['bk-1', 'bk-1'],
    )
    assert.deepEqual((await migrationStatus(copy)).pending, [])
    await copy.close()
    await source.close()
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})
