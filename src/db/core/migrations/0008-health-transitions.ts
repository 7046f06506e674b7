/**
 * Health transitions and damping (issue 15):
 * - `health_transitions`: every change of a device's health, with its reason and time, kept for
 *   the events issue to publish (src/db/health-transitions.ts). Numbered, so a reader can resume
 *   after the last one it saw.
 * - `devices.healthy_reports`: how many healthy reports in a row a fenced device has had; it is
 *   offered again at `[conductor] health_recovery_reports` (damping; src/domain/health/report.ts).
 */
import { sql, type Kysely } from 'kysely'
import type { DialectName } from '../connection.js'

export const healthTransitionsMigration = (dialect: DialectName) => ({
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .alterTable('devices')
      .addColumn('healthy_reports', 'integer', (c) => c.notNull().defaultTo(0))
      .execute()
    let t = db.schema
      .createTable('health_transitions')
      .addColumn('id', dialect === 'postgres' ? 'serial' : 'integer', (c) =>
        dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
      )
      .addColumn('device_uuid', 'varchar(36)', (c) => c.notNull())
      .addColumn('hostname', 'varchar(255)', (c) => c.notNull())
      .addColumn('from_health', 'varchar(16)', (c) => c.notNull())
      .addColumn('to_health', 'varchar(16)', (c) => c.notNull())
      .addColumn('reason', 'varchar(255)')
      .addColumn('created_at', 'varchar(40)', (c) => c.notNull())
    if (dialect === 'mysql')
      t = t.modifyEnd(sql`ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`)
    await t.execute()
    await db.schema
      .createIndex('health_transitions_device_idx')
      .on('health_transitions')
      .columns(['device_uuid', 'id'])
      .execute()
  },
  async down(db: Kysely<unknown>): Promise<void> {
    // Dropping the table drops its index on every database.
    await db.schema.dropTable('health_transitions').execute()
    await db.schema.alterTable('devices').dropColumn('healthy_reports').execute()
  },
})
