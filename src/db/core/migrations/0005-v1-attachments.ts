/**
 * The v1 API's writes (api-v1-and-cli.md):
 * - `deployables.acc_specs`: the spec an operator set with `PUT /v1/accelerators/{uuid}/acc_specs`
 *   (canonical JSON); null = derived from the inventory. Agent reports never touch it.
 * - `accelerator_requests.device_profile_id` becomes nullable: a v1 attach is recorded as an
 *   accelerator request with no device profile, so that v1 and v2 allocations are one kind of
 *   record, claim handles the same way and see each other.
 *
 * PostgreSQL and MariaDB drop the NOT NULL in place. SQLite cannot alter a column, so it rebuilds
 * the table (same columns, keys and indexes) inside the migration's transaction; nothing
 * references `accelerator_requests`, so the rebuild breaks no foreign key.
 */
import { sql, type Kysely } from 'kysely'
import type { DialectName } from '../connection.js'

const ARQ_INDEXES: [string, string][] = [
  ['arqs_state_idx', 'state'],
  ['arqs_instance_idx', 'instance_uuid'],
  ['arqs_project_idx', 'project_id'],
  ['arqs_profile_idx', 'device_profile_id'],
  ['arqs_deployable_idx', 'deployable_id'],
  ['arqs_hostname_idx', 'hostname'],
]

/** Rebuilds SQLite's `accelerator_requests` with `device_profile_id` nullable (`notNull` false) or not. */
async function rebuildSqlite(db: Kysely<unknown>, notNull: boolean): Promise<void> {
  await db.schema
    .createTable('accelerator_requests_new')
    .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
    .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
    .addColumn('state', 'varchar(16)', (c) => c.notNull())
    .addColumn('device_profile_id', 'integer', (c) => {
      const col = c.references('device_profiles.id').onDelete('restrict')
      return notNull ? col.notNull() : col
    })
    .addColumn('device_profile_group_id', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('project_id', 'varchar(255)')
    .addColumn('hostname', 'varchar(255)')
    .addColumn('device_rp_uuid', 'varchar(36)')
    .addColumn('instance_uuid', 'varchar(36)')
    .addColumn('attach_handle_id', 'integer', (c) =>
      c.unique().references('attach_handles.id').onDelete('restrict'),
    )
    .addColumn('deployable_id', 'integer', (c) =>
      c.references('deployables.id').onDelete('restrict'),
    )
    .addColumn('created_at', 'varchar(40)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(40)')
    .execute()
  await sql`INSERT INTO accelerator_requests_new SELECT id, uuid, state, device_profile_id, device_profile_group_id,
    project_id, hostname, device_rp_uuid, instance_uuid, attach_handle_id, deployable_id, created_at, updated_at
    FROM accelerator_requests`.execute(db)
  await db.schema.dropTable('accelerator_requests').execute()
  await db.schema.alterTable('accelerator_requests_new').renameTo('accelerator_requests').execute()
  for (const [name, column] of ARQ_INDEXES)
    await db.schema.createIndex(name).on('accelerator_requests').column(column).execute()
}

export function v1AttachmentsMigration(dialect: DialectName) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable('deployables').addColumn('acc_specs', 'text').execute()
      if (dialect === 'sqlite') await rebuildSqlite(db, false)
      else if (dialect === 'mysql')
        await sql`ALTER TABLE accelerator_requests MODIFY device_profile_id INTEGER NULL`.execute(
          db,
        )
      else
        await sql`ALTER TABLE accelerator_requests ALTER COLUMN device_profile_id DROP NOT NULL`.execute(
          db,
        )
    },
    async down(db: Kysely<unknown>): Promise<void> {
      // v1 attachments have no profile: they cannot survive a downgrade.
      await sql`UPDATE attach_handles SET in_use = 0 WHERE id IN
        (SELECT attach_handle_id FROM accelerator_requests WHERE device_profile_id IS NULL)`.execute(
        db,
      )
      await sql`DELETE FROM accelerator_requests WHERE device_profile_id IS NULL`.execute(db)
      if (dialect === 'sqlite') await rebuildSqlite(db, true)
      else if (dialect === 'mysql')
        await sql`ALTER TABLE accelerator_requests MODIFY device_profile_id INTEGER NOT NULL`.execute(
          db,
        )
      else
        await sql`ALTER TABLE accelerator_requests ALTER COLUMN device_profile_id SET NOT NULL`.execute(
          db,
        )
      await db.schema.alterTable('deployables').dropColumn('acc_specs').execute()
    },
  }
}
