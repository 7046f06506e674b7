/**
 * `custody_records` (issue 18, part 4; docs/custody.md): the custody ledger, append-only. A release
 * inserts its record unsealed (`seq`, `prev_hash`, `hash` null); the conductor's sealer gives each
 * its place in the hash chain. `seq` is unique, so two sealers can never fork the chain.
 * `custody_sealer` holds one row: the sealer's lock (as `event_relay` is the relay's).
 */
import { sql, type Kysely, type RawBuilder } from 'kysely'
import type { DialectName } from '../connection.js'

export const custodyMigration = (dialect: DialectName) => ({
  async up(db: Kysely<unknown>): Promise<void> {
    const mysql = <T extends { modifyEnd(end: RawBuilder<unknown>): T }>(t: T): T =>
      dialect === 'mysql'
        ? t.modifyEnd(sql`ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`)
        : t
    const uuid = 'varchar(36)'
    const ts = 'varchar(40)'
    const records = db.schema
      .createTable('custody_records')
      .addColumn('id', dialect === 'postgres' ? 'serial' : 'integer', (c) =>
        dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
      )
      .addColumn('seq', 'integer', (c) => c.unique())
      .addColumn('prev_hash', 'varchar(64)')
      .addColumn('hash', 'varchar(64)')
      .addColumn('uuid', uuid, (c) => c.notNull().unique())
      .addColumn('kind', 'varchar(16)', (c) => c.notNull())
      .addColumn('allocation_uuid', uuid)
      .addColumn('arq_uuid', uuid)
      .addColumn('device_uuid', uuid)
      .addColumn('deployable_uuid', uuid)
      .addColumn('handle_uuid', uuid)
      .addColumn('device_serial', 'varchar(255)')
      .addColumn('hostname', 'varchar(255)')
      .addColumn('project_id', 'varchar(255)')
      .addColumn('user_id', 'varchar(255)')
      .addColumn('instance_uuid', 'varchar(255)')
      .addColumn('allocated_via', 'varchar(16)')
      .addColumn('bound_at', ts)
      .addColumn('released_at', ts)
      .addColumn('clean_method', 'varchar(64)')
      .addColumn('clean_result', 'varchar(32)')
      .addColumn('clean_evidence_sha256', 'varchar(64)')
      .addColumn('cleaned_at', ts)
      .addColumn('detail', 'text')
      .addColumn('created_at', ts, (c) => c.notNull())
    await mysql(records).execute()
    // Unsealed rows are `seq IS NULL` in id order (as the outbox's unsent ones); PostgreSQL gets a
    // partial index of their ids as well.
    await db.schema
      .createIndex('custody_unsealed_idx')
      .on('custody_records')
      .columns(['seq', 'id'])
      .execute()
    if (dialect === 'postgres')
      await db.schema
        .createIndex('custody_unsealed_ids_idx')
        .on('custody_records')
        .column('id')
        .where(sql.ref('seq'), 'is', null)
        .execute()
    for (const column of ['device_uuid', 'project_id', 'instance_uuid', 'created_at'])
      await db.schema
        .createIndex(`custody_${column}_idx`)
        .on('custody_records')
        .columns([column, 'seq'])
        .execute()
    await mysql(
      db.schema
        .createTable('custody_sealer')
        .addColumn('id', 'integer', (c) => c.primaryKey())
        .addColumn('updated_at', ts),
    ).execute()
    await db
      .insertInto('custody_sealer' as never)
      .values({ id: 1, updated_at: null } as never)
      .execute()
  },
  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('custody_sealer').execute()
    await db.schema.dropTable('custody_records').execute()
  },
})
