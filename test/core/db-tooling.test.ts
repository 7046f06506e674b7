/**
 * `cyborg db` tooling (docs/operations.md) on SQLite, PostgreSQL and MariaDB, with data:
 * - every migration is undone and redone one step at a time over a populated database: the rows
 *   of the tables that stay are kept through every step down to 0001 and back up to the latest;
 * - a downgrade that would drop data is refused, naming the migration and what it would drop
 *   (0015's fenced units, 0014's cleaning units, 0013's custody records, 0005's v1 attachments),
 *   until `force`; a downgrade to base leaves no table but the migrator's own;
 * - revisions by name, by number and `base`; an unknown one, or an upgrade "to" a lower one, is
 *   refused naming it;
 * - `db check` finds planted inconsistencies; `db backup` (SQLite) copies rows still in the WAL.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { openDatabase } from '../../src/db/connection.js'
import { checkDatabase } from '../../src/db/db-check.js'
import { downgradeTo, migrateToLatest, migrationStatus, upgradeTo } from '../../src/db/migrate.js'
import { canonicalJson } from '../../src/domain/inventory.js'
import { testDialects } from '../support/db.js'
import { ingestSnapshot } from '../support/ingest.js'
import { sampleDevice } from '../support/sample-inventory.js'

const NOW = '2026-11-26T00:00:00.000000+00:00'

for (const dialect of await testDialects()) {
  await test(`db tooling on ${dialect.name}`, { skip: dialect.skip }, async (t) => {
    const handle = await dialect.create()
    try {
      const devices = [0, 1].map((n) => sampleDevice('mig-1', n))
      await ingestSnapshot(
        handle.db,
        { host: 'mig-1', hash: 'h', devices },
        { autoActivate: true, now: NOW },
      )
      const count = async (table: 'devices' | 'deployables' | 'attach_handles') =>
        Number(
          (
            await handle.db
              .selectFrom(table)
              .select((eb) => eb.fn.countAll().as('n'))
              .executeTakeFirstOrThrow()
          ).n,
        )
      const before = {
        devices: await count('devices'),
        deployables: await count('deployables'),
        handles: await count('attach_handles'),
      }
      assert.ok(before.handles >= 2)
      const handles = await handle.db
        .selectFrom('attach_handles')
        .select('id')
        .orderBy('id')
        .execute()
      // A v1 attachment (no profile), a unit cleaning and a unit fenced by a program.
      await handle.db
        .insertInto('accelerator_requests')
        .values({
          uuid: '7ab00000-0000-4000-8000-000000000001',
          state: 'Bound',
          device_profile_id: null,
          device_profile_group_id: 0,
          hostname: 'mig-1',
          attach_handle_id: handles[0]!.id,
          created_at: NOW,
        })
        .execute()
      await handle.db
        .updateTable('attach_handles')
        .set({ in_use: 1 })
        .where('id', '=', handles[0]!.id)
        .execute()
      await handle.db
        .updateTable('attach_handles')
        .set({
          in_use: 1,
          reconfig_uuid: '7ab00000-0000-4000-8000-0000000000f1',
          reconfig_kind: 'program',
          reconfig_since: NOW,
        })
        .where('id', '=', handles[1]!.id)
        .execute()

      await t.test(
        'db check finds nothing on a consistent database, then each planted problem',
        async () => {
          assert.deepEqual(await checkDatabase(handle.db), [])
          await handle.db
            .updateTable('attach_handles')
            .set({ in_use: 1 })
            .where('id', '=', handles[2]!.id)
            .execute()
          const found = await checkDatabase(handle.db)
          assert.deepEqual(
            found.map((f) => f.kind),
            ['handle_in_use_by_nobody'],
          )
          await handle.db
            .updateTable('attach_handles')
            .set({ in_use: 0 })
            .where('id', '=', handles[2]!.id)
            .execute()
        },
      )

      const status = await migrationStatus(handle)
      assert.deepEqual(status.pending, [])
      assert.equal(status.current, status.all.at(-1))

      await t.test('refuses what would drop data, naming it, until --force', async () => {
        await assert.rejects(downgradeTo(handle, '14'), (err: Error & { code?: string }) => {
          assert.equal(err.code, 'DOWNGRADE_LOSES_DATA')
          assert.match(
            err.message,
            /0015-reconfig-fence would drop 1 unit\(s\) held by an unfinished program/,
          )
          return true
        })
        await assert.rejects(
          downgradeTo(handle, '0004-arq-instances'),
          /0005-v1-attachments would drop 1 v1 attachment/,
        )
        await assert.rejects(
          downgradeTo(handle, 'nope'),
          /unknown revision "nope": expected base, or one of 0001-initial/,
        )
        await assert.rejects(upgradeTo(handle, '3'), /below the current revision/)
        assert.equal((await migrationStatus(handle)).current, status.current, 'nothing was undone')
      })

      await t.test(
        'every migration down to 0001 and back up, one step at a time, keeping the rows',
        async () => {
          const names = status.all
          for (let i = names.length - 1; i >= 1; i--) {
            const out = await downgradeTo(handle, names[i - 1]!, { force: true })
            assert.deepEqual(out.undone, [names[i]])
            assert.equal(await count('devices'), before.devices, `after undoing ${names[i]}`)
            assert.equal(await count('deployables'), before.deployables)
            assert.equal(await count('attach_handles'), before.handles)
          }
          assert.equal((await migrationStatus(handle)).current, '0001-initial')
          for (const name of names.slice(1)) {
            const out = await upgradeTo(handle, name)
            assert.deepEqual(out.applied, [name])
            assert.equal(await count('devices'), before.devices, `after redoing ${name}`)
          }
          assert.deepEqual((await migrationStatus(handle)).pending, [])
          // The schema works again: a row of the newest columns can be written.
          await handle.db
            .updateTable('attach_handles')
            .set({ reconfig_uuid: null, reconfig_kind: null, clean_state: null })
            .execute()
          assert.deepEqual(await checkDatabase(handle.db), [])
        },
      )

      await t.test(
        'base drops every table but the migrator’s; upgrade brings them all back',
        async () => {
          await downgradeTo(handle, 'base', { force: true })
          const left = (await handle.db.introspection.getTables()).map((x) => x.name)
          assert.deepEqual(
            left.filter((n) => !n.startsWith('cyborg_migrations')),
            [],
          )
          await migrateToLatest(handle)
          assert.deepEqual((await migrationStatus(handle)).pending, [])
          assert.equal(await count('devices'), 0)
        },
      )
    } finally {
      await handle.close()
    }
  })
}

await test('db backup copies an SQLite database with what is still in its WAL', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'cyborg-backup-'))
  try {
    const source = await openDatabase(`sqlite:///${dir}/live.db`)
    await migrateToLatest(source)
    await ingestSnapshot(
      source.db,
      { host: 'bk-1', hash: 'h', devices: [sampleDevice('bk-1', 0)] },
      { autoActivate: true, now: NOW },
    )
    assert.ok(source.backup, 'an SQLite handle can back up')
    await source.backup(path.join(dir, 'copy.db'))
    const copy = await openDatabase(`sqlite:///${dir}/copy.db`)
    const rows = await copy.db.selectFrom('devices').select(['hostname', 'cpid_info']).execute()
    assert.deepEqual(
      rows.map((r) => r.hostname),
      ['bk-1'],
    )
    assert.equal(rows[0]!.cpid_info, canonicalJson(sampleDevice('bk-1', 0).controlPath.info))
    await copy.close()
    await source.close()
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})
