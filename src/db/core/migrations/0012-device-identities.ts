/**
 * `device_identities` (issue 18, part 1; docs/identity.md): every device ever seen on a host, by
 * identity (`serial:<serial>` or `path:<canonical control path>`), with its uuid and the lifecycle
 * and status it had when its row was last deleted, so that a device that comes back gets both
 * back. Existing devices are remembered under their control path with the uuid they have: nothing
 * that a bound ARQ or Placement refers to changes, and a device that then reports a serial keeps
 * its uuid (its identity is renamed, src/domain/device-identity.ts).
 */
import { sql, type Kysely } from 'kysely'
import type { DialectName } from '../connection.js'

/** Rows per INSERT while filling: stays under every driver's parameter limit. */
const CHUNK = 200

export const deviceIdentitiesMigration = (dialect: DialectName) => ({
  async up(db: Kysely<unknown>): Promise<void> {
    let table = db.schema
      .createTable('device_identities')
      .addColumn('hostname', 'varchar(255)', (c) => c.notNull())
      // `path:` and a cpid_info of up to 255 characters.
      .addColumn('identity_key', 'varchar(320)', (c) => c.notNull())
      .addColumn('device_uuid', 'varchar(36)', (c) => c.notNull())
      .addColumn('lifecycle', 'varchar(16)', (c) => c.notNull())
      .addColumn('lifecycle_reason', 'text')
      .addColumn('status', 'varchar(16)', (c) => c.notNull())
      .addColumn('created_at', 'varchar(40)', (c) => c.notNull())
      .addColumn('updated_at', 'varchar(40)')
      .addPrimaryKeyConstraint('device_identities_pk', ['hostname', 'identity_key'])
    if (dialect === 'mysql')
      table = table.modifyEnd(sql`ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`)
    await table.execute()
    await db.schema
      .createIndex('device_identities_uuid_idx')
      .on('device_identities')
      .column('device_uuid')
      .execute()

    const devices = await (db as Kysely<Previous>)
      .selectFrom('devices')
      .select(['hostname', 'uuid', 'cpid_info', 'lifecycle', 'lifecycle_reason', 'status'])
      .select('created_at')
      .orderBy('id')
      .execute()
    for (let i = 0; i < devices.length; i += CHUNK) {
      await (db as Kysely<Previous>)
        .insertInto('device_identities')
        .values(
          devices.slice(i, i + CHUNK).map((d) => ({
            hostname: d.hostname,
            identity_key: `path:${d.cpid_info}`,
            device_uuid: d.uuid,
            lifecycle: d.lifecycle,
            lifecycle_reason: d.lifecycle_reason,
            status: d.status,
            created_at: d.created_at,
            updated_at: null,
          })),
        )
        .execute()
    }
  },
  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('device_identities').execute()
  },
})

/** The tables as this migration sees them (not the current schema.ts, which may move on). */
interface Previous {
  devices: {
    id: number
    hostname: string
    uuid: string
    cpid_info: string
    lifecycle: string
    lifecycle_reason: string | null
    status: string
    created_at: string
  }
  device_identities: {
    hostname: string
    identity_key: string
    device_uuid: string
    lifecycle: string
    lifecycle_reason: string | null
    status: string
    created_at: string
    updated_at: string | null
  }
}
