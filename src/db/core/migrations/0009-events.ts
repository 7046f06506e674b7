/**
 * Events (issue 16, the outbox): every state change writes a row into `events` in the transaction
 * that makes it, and the conductor's relay (src/conductor/outbox/event-relay.ts) publishes unsent rows in
 * id order and stamps `sent_at`. `event_relay` holds one row: the relay's lock, held
 * (`SELECT … FOR UPDATE SKIP LOCKED`) across one delivery, so that one relay publishes at a time.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely'
import type { DialectName } from '../connection.js'

export const eventsMigration = (dialect: DialectName) => ({
  async up(db: Kysely<unknown>): Promise<void> {
    const mysql = <T extends { modifyEnd(end: RawBuilder<unknown>): T }>(t: T): T =>
      dialect === 'mysql'
        ? t.modifyEnd(sql`ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`)
        : t
    const events = db.schema
      .createTable('events')
      .addColumn('id', dialect === 'postgres' ? 'serial' : 'integer', (c) =>
        dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
      )
      .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
      .addColumn('event_type', 'varchar(64)', (c) => c.notNull())
      .addColumn('priority', 'varchar(8)', (c) => c.notNull())
      .addColumn('resource_type', 'varchar(32)', (c) => c.notNull())
      .addColumn('resource_uuid', 'varchar(255)', (c) => c.notNull())
      .addColumn('project_id', 'varchar(255)')
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('created_at', 'varchar(40)', (c) => c.notNull())
      .addColumn('sent_at', 'varchar(40)')
    await mysql(events).execute()
    // Unsent rows are `sent_at IS NULL` in id order: one index range, read in order (SQLite,
    // MariaDB); the purge reads sent ones by `sent_at`. PostgreSQL would sort that range by id, so
    // it gets a partial index of the unsent ids as well.
    await db.schema
      .createIndex('events_unsent_idx')
      .on('events')
      .columns(['sent_at', 'id'])
      .execute()
    if (dialect === 'postgres')
      await db.schema
        .createIndex('events_unsent_ids_idx')
        .on('events')
        .column('id')
        .where(sql.ref('sent_at'), 'is', null)
        .execute()
    await mysql(
      db.schema
        .createTable('event_relay')
        .addColumn('id', 'integer', (c) => c.primaryKey())
        .addColumn('updated_at', 'varchar(40)'),
    ).execute()
    await db
      .insertInto('event_relay' as never)
      .values({ id: 1, updated_at: null } as never)
      .execute()
  },
  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('event_relay').execute()
    await db.schema.dropTable('events').execute()
  },
})
