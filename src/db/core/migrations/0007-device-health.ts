/**
 * Device health with a reason and a time (issue 15): `devices.health_reason` says why a device is
 * not `ok` (e.g. `agent cyborg-agent@compute-7 silent since …`), `health_updated_at` when health
 * last changed. `services_lease_idx` makes the lease sweep one indexed query: agents by last beat.
 */
import type { Kysely } from 'kysely'
import type { DialectName } from '../connection.js'

export const deviceHealthMigration = (dialect: DialectName) => ({
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('devices').addColumn('health_reason', 'varchar(255)').execute()
    await db.schema.alterTable('devices').addColumn('health_updated_at', 'varchar(40)').execute()
    await db.schema
      .createIndex('services_lease_idx')
      .on('services')
      .columns(['binary', 'last_seen'])
      .execute()
  },
  async down(db: Kysely<unknown>): Promise<void> {
    const drop = db.schema.dropIndex('services_lease_idx')
    // MySQL names the table of an index to drop; PostgreSQL and SQLite reject it.
    await (dialect === 'mysql' ? drop.on('services') : drop).execute()
    await db.schema.alterTable('devices').dropColumn('health_updated_at').execute()
    await db.schema.alterTable('devices').dropColumn('health_reason').execute()
  },
})
