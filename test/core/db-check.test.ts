/**
 * `cyborg db check`'s database checks (src/db/core/db-check.ts) on SQLite, PostgreSQL and MariaDB: a
 * consistent database (the migration seeds) has no finding; then each planted inconsistency is
 * named once, by kind and uuid. Orphans can only exist with the foreign keys off, as in a database
 * restored or imported with its checks off: they are planted so, on one connection.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { sql, type Kysely } from 'kysely'
import type { DialectName } from '../../src/db/core/connection.js'
import { checkDatabase } from '../../src/db/core/db-check.js'
import type { Database } from '../../src/db/core/schema.js'
import { testDialects } from '../support/db.js'
import { insert, NOW, SEED, SEEDS } from '../support/migration-seeds.js'

const u = (n: number) => `c4ec0000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`
const MISSING = 999_999

/** The session setting that turns foreign key checks off (`on` false) or back on. */
const fkChecks = (dialect: DialectName, on: boolean) =>
  dialect === 'sqlite'
    ? sql.raw(`PRAGMA foreign_keys = ${on ? 'ON' : 'OFF'}`)
    : dialect === 'mysql'
      ? sql.raw(`SET FOREIGN_KEY_CHECKS = ${on ? 1 : 0}`)
      : sql.raw(`SET session_replication_role = ${on ? 'DEFAULT' : 'replica'}`)

async function idOf(db: Kysely<Database>, table: string, uuid: string): Promise<number> {
  const { rows } = await sql<{
    id: number
  }>`select id from ${sql.table(table)} where uuid = ${uuid}`.execute(db)
  return Number(rows[0]!.id)
}

for (const dialect of await testDialects()) {
  await test(`db check on ${dialect.name}`, { skip: dialect.skip }, async () => {
    const handle = await dialect.create()
    const { db } = handle
    try {
      for (const seed of Object.values(SEEDS)) await seed(db)
      assert.deepEqual(await checkDatabase(db), [], 'the seeds are consistent')

      const depA = await idOf(db, 'deployables', SEED.depA)
      const depB = await idOf(db, 'deployables', SEED.depB)
      const profile = await idOf(db, 'device_profiles', SEED.profile)
      const arq = (uuid: string, row: Record<string, unknown>) =>
        insert(db, 'accelerator_requests', {
          uuid,
          state: 'Bound',
          device_profile_id: profile,
          created_at: NOW,
          ...row,
        })
      const handleOn = (uuid: string, deployable: number, inUse: number, fn: string) =>
        insert(db, 'attach_handles', {
          uuid,
          deployable_id: deployable,
          attach_type: 'PCI',
          attach_info: `{"function":"${fn}"}`,
          in_use: inUse,
          created_at: NOW,
        })
      // With the foreign keys on: the rules of units in use.
      await sql`update attach_handles set in_use = 1 where uuid = ${SEED.handles[4]!}`.execute(db)
      await arq(u(1), { attach_handle_id: null })
      await handleOn(u(2), depB, 0, 'b0')
      await arq(u(3), { attach_handle_id: await idOf(db, 'attach_handles', u(2)) })
      await handleOn(u(4), depB, 1, 'b1')
      await arq(u(5), {
        attach_handle_id: await idOf(db, 'attach_handles', u(4)),
        deployable_id: depA,
      })
      // With them off: rows whose parent is missing.
      await db.connection().execute(async (c) => {
        await fkChecks(dialect.name, false).execute(c)
        try {
          const device = await idOf(c, 'devices', SEED.devA)
          const dep = (uuid: string, row: Record<string, unknown>) =>
            insert(c, 'deployables', {
              uuid,
              name: uuid,
              num_accelerators: 1,
              created_at: NOW,
              ...row,
            })
          await dep(u(10), { device_id: MISSING })
          await dep(u(11), { device_id: device, parent_id: MISSING })
          await insert(c, 'attributes', {
            uuid: u(12),
            deployable_id: MISSING,
            key: 'rc',
            value: 'PGPU',
            created_at: NOW,
          })
          await insert(c, 'attach_handles', {
            uuid: u(13),
            deployable_id: MISSING,
            attach_type: 'PCI',
            attach_info: '{}',
            in_use: 0,
            created_at: NOW,
          })
          await insert(c, 'accelerator_requests', {
            uuid: u(14),
            state: 'Initial',
            device_profile_id: MISSING,
            created_at: NOW,
          })
          await insert(c, 'accelerator_requests', {
            uuid: u(15),
            state: 'Bound',
            device_profile_id: profile,
            attach_handle_id: MISSING,
            created_at: NOW,
          })
          await insert(c, 'accelerator_requests', {
            uuid: u(16),
            state: 'Initial',
            device_profile_id: profile,
            deployable_id: MISSING,
            created_at: NOW,
          })
          await insert(c, 'webhook_deliveries', {
            webhook_id: MISSING,
            event_uuid: u(17),
            event_type: 'accelerator.device.added',
            body: '{}',
            state: 'pending',
            next_attempt_at: NOW,
            created_at: NOW,
          })
        } finally {
          await fkChecks(dialect.name, true).execute(c)
        }
      })

      const found = (await checkDatabase(db)).map((f) => [
        f.kind,
        /[0-9a-f]{8}-[0-9a-f-]{27}/.exec(f.message)?.[0],
      ])
      assert.deepEqual(found, [
        ['orphan_deployable', u(10)],
        ['orphan_deployable', u(11)],
        ['orphan_attribute', u(12)],
        ['orphan_handle', u(13)],
        ['arq_missing_profile', u(14)],
        ['arq_missing_handle', u(15)],
        ['arq_missing_deployable', u(16)],
        ['orphan_webhook_delivery', u(17)],
        ['arq_handle_elsewhere', u(5)],
        ['bound_without_handle', u(1)],
        ['held_handle_not_in_use', u(2)],
        ['handle_in_use_by_nobody', SEED.handles[4]],
      ])
    } finally {
      await handle.close()
    }
  })
}
