/**
 * Webhooks (issue 16, docs/webhooks.md):
 * - `webhooks`: the endpoints administrators registered, with their secret, filters, and the
 *   dispatcher's per-endpoint lease (`claimed_by` until `claimed_until`) and backoff (`retry_at`).
 * - `webhook_deliveries`: one row per (endpoint, event), written by the conductor's webhook sink;
 *   the dispatcher sends each endpoint's pending rows oldest first, and marks them delivered or
 *   dead. UNIQUE (webhook_id, event_uuid): an event the relay delivers twice is queued once.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely'
import type { DialectName } from '../connection.js'

export const webhooksMigration = (dialect: DialectName) => ({
  async up(db: Kysely<unknown>): Promise<void> {
    const mysql = <T extends { modifyEnd(end: RawBuilder<unknown>): T }>(t: T): T =>
      dialect === 'mysql'
        ? t.modifyEnd(sql`ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`)
        : t
    const id = dialect === 'postgres' ? 'serial' : 'integer'
    await mysql(
      db.schema
        .createTable('webhooks')
        .addColumn('id', id, (c) =>
          dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
        )
        .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
        .addColumn('url', 'varchar(2048)', (c) => c.notNull())
        .addColumn('secret', 'varchar(128)', (c) => c.notNull())
        .addColumn('event_types', 'text', (c) => c.notNull())
        .addColumn('project_ids', 'text', (c) => c.notNull())
        .addColumn('description', 'varchar(255)')
        .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
        .addColumn('created_at', 'varchar(40)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(40)')
        .addColumn('claimed_by', 'varchar(36)')
        .addColumn('claimed_until', 'varchar(40)')
        .addColumn('retry_at', 'varchar(40)'),
    ).execute()
    await mysql(
      db.schema
        .createTable('webhook_deliveries')
        .addColumn('id', id, (c) =>
          dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
        )
        .addColumn('webhook_id', 'integer', (c) =>
          c.notNull().references('webhooks.id').onDelete('restrict'),
        )
        .addColumn('event_uuid', 'varchar(36)', (c) => c.notNull())
        .addColumn('event_type', 'varchar(64)', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('state', 'varchar(16)', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', 'varchar(40)', (c) => c.notNull())
        .addColumn('last_attempt_at', 'varchar(40)')
        .addColumn('last_status', 'integer')
        .addColumn('last_error', 'varchar(255)')
        .addColumn('created_at', 'varchar(40)', (c) => c.notNull())
        .addColumn('finished_at', 'varchar(40)')
        .addUniqueConstraint('webhook_deliveries_event_uq', ['webhook_id', 'event_uuid']),
    ).execute()
    // An endpoint's oldest pending row, its rows by state: one index range each.
    await db.schema
      .createIndex('webhook_deliveries_queue_idx')
      .on('webhook_deliveries')
      .columns(['webhook_id', 'state', 'id'])
      .execute()
    // The purge of old delivered rows.
    await db.schema
      .createIndex('webhook_deliveries_finished_idx')
      .on('webhook_deliveries')
      .columns(['state', 'finished_at'])
      .execute()
  },
  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('webhook_deliveries').execute()
    await db.schema.dropTable('webhooks').execute()
  },
})
