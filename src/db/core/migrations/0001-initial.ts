/**
 * The one-inventory schema (docs/ARCHITECTURE.md, "Data model"). Written once for SQLite,
 * PostgreSQL and MariaDB; only the auto-increment primary key and MySQL's table options differ.
 */
import { sql, type CreateTableBuilder, type Kysely } from 'kysely'
import type { DialectName } from '../connection.js'

type Builder = CreateTableBuilder<string, never>

/** An integer primary key that the database numbers. */
function withId(dialect: DialectName, t: Builder): Builder {
  return dialect === 'postgres'
    ? t.addColumn('id', 'serial', (c) => c.primaryKey())
    : t.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
}

/** uuid (unique), then the caller's columns, then timestamps; MySQL gets InnoDB, utf8mb4, binary collation. */
function table(
  dialect: DialectName,
  db: Kysely<unknown>,
  name: string,
  columns: (t: Builder) => Builder,
): Builder {
  let t = withId(dialect, db.schema.createTable(name) as Builder)
  t = columns(t)
  t = t
    .addColumn('created_at', 'varchar(40)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(40)')
  if (dialect === 'mysql')
    t = t.modifyEnd(sql`ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`)
  return t
}

const uuid = (t: Builder) => t.addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())

/** The inventory: devices, their deployables, the deployables' attributes and attach handles. */
async function createInventoryTables(dialect: DialectName, db: Kysely<unknown>): Promise<void> {
  await table(dialect, db, 'devices', (t) =>
    uuid(t)
      .addColumn('type', 'varchar(16)', (c) => c.notNull())
      .addColumn('vendor', 'varchar(255)', (c) => c.notNull())
      .addColumn('model', 'varchar(255)', (c) => c.notNull())
      .addColumn('std_board_info', 'text')
      .addColumn('vendor_board_info', 'text')
      .addColumn('hostname', 'varchar(255)', (c) => c.notNull())
      .addColumn('status', 'varchar(16)', (c) => c.notNull().defaultTo('enabled'))
      .addColumn('lifecycle', 'varchar(16)', (c) => c.notNull().defaultTo('inactive'))
      .addColumn('lifecycle_reason', 'text')
      .addColumn('health', 'varchar(16)', (c) => c.notNull().defaultTo('ok'))
      .addColumn('cpid_type', 'varchar(16)', (c) => c.notNull())
      .addColumn('cpid_info', 'varchar(255)', (c) => c.notNull())
      .addUniqueConstraint('devices_host_cpid_uq', ['hostname', 'cpid_info']),
  ).execute()
  await table(dialect, db, 'deployables', (t) =>
    uuid(t)
      .addColumn('device_id', 'integer', (c) =>
        c.notNull().references('devices.id').onDelete('restrict'),
      )
      .addColumn('parent_id', 'integer', (c) => c.references('deployables.id').onDelete('restrict'))
      .addColumn('root_id', 'integer', (c) => c.references('deployables.id').onDelete('restrict'))
      .addColumn('name', 'varchar(255)', (c) => c.notNull().unique())
      .addColumn('num_accelerators', 'integer', (c) => c.notNull())
      .addColumn('rp_uuid', 'varchar(36)', (c) => c.unique())
      .addColumn('driver_name', 'varchar(100)')
      .addColumn('bitstream_id', 'varchar(36)'),
  ).execute()
  await table(dialect, db, 'attributes', (t) =>
    uuid(t)
      .addColumn('deployable_id', 'integer', (c) =>
        c.notNull().references('deployables.id').onDelete('restrict'),
      )
      .addColumn('key', 'varchar(255)', (c) => c.notNull())
      .addColumn('value', 'text', (c) => c.notNull())
      .addUniqueConstraint('attributes_dep_key_uq', ['deployable_id', 'key']),
  ).execute()
  await table(dialect, db, 'attach_handles', (t) =>
    uuid(t)
      .addColumn('deployable_id', 'integer', (c) =>
        c.notNull().references('deployables.id').onDelete('restrict'),
      )
      .addColumn('attach_type', 'varchar(16)', (c) => c.notNull())
      .addColumn('attach_info', 'varchar(255)', (c) => c.notNull())
      .addColumn('in_use', 'integer', (c) => c.notNull().defaultTo(0))
      .addUniqueConstraint('attach_handles_dep_info_uq', ['deployable_id', 'attach_info']),
  ).execute()
}

/** Device profiles and the accelerator requests made of them. */
async function createRequestTables(dialect: DialectName, db: Kysely<unknown>): Promise<void> {
  await table(dialect, db, 'device_profiles', (t) =>
    uuid(t)
      .addColumn('name', 'varchar(255)', (c) => c.notNull().unique())
      .addColumn('description', 'text')
      .addColumn('profile_json', 'text', (c) => c.notNull()),
  ).execute()
  await table(dialect, db, 'accelerator_requests', (t) =>
    uuid(t)
      .addColumn('state', 'varchar(16)', (c) => c.notNull())
      .addColumn('device_profile_id', 'integer', (c) =>
        c.notNull().references('device_profiles.id').onDelete('restrict'),
      )
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
      ),
  ).execute()
}

/** The services' heartbeats and each agent host's drivers. */
async function createServiceTables(dialect: DialectName, db: Kysely<unknown>): Promise<void> {
  await table(dialect, db, 'services', (t) =>
    t
      .addColumn('host', 'varchar(255)', (c) => c.notNull())
      .addColumn('binary', 'varchar(64)', (c) => c.notNull())
      .addColumn('version', 'varchar(64)', (c) => c.notNull())
      .addColumn('report_hash', 'varchar(64)')
      .addColumn('last_seen', 'varchar(40)', (c) => c.notNull())
      .addUniqueConstraint('services_host_binary_uq', ['host', 'binary']),
  ).execute()
  await table(dialect, db, 'agent_drivers', (t) =>
    t
      .addColumn('host', 'varchar(255)', (c) => c.notNull())
      .addColumn('driver_name', 'varchar(100)', (c) => c.notNull())
      .addColumn('version', 'varchar(64)', (c) => c.notNull())
      .addColumn('state', 'varchar(16)', (c) => c.notNull())
      .addUniqueConstraint('agent_drivers_host_driver_uq', ['host', 'driver_name']),
  ).execute()
}

async function createIndexes(db: Kysely<unknown>): Promise<void> {
  // An index for every list filter and every foreign key (unique constraints already index theirs).
  const indexes: [string, string, string[]][] = [
    ['devices_type_idx', 'devices', ['type']],
    ['devices_vendor_idx', 'devices', ['vendor']],
    ['devices_created_idx', 'devices', ['created_at']],
    ['devices_lifecycle_idx', 'devices', ['lifecycle']],
    ['deployables_device_idx', 'deployables', ['device_id']],
    ['deployables_parent_idx', 'deployables', ['parent_id']],
    ['deployables_root_idx', 'deployables', ['root_id']],
    ['attributes_key_idx', 'attributes', ['key']],
    ['device_profiles_created_idx', 'device_profiles', ['created_at']],
    ['arqs_state_idx', 'accelerator_requests', ['state']],
    ['arqs_instance_idx', 'accelerator_requests', ['instance_uuid']],
    ['arqs_project_idx', 'accelerator_requests', ['project_id']],
    ['arqs_profile_idx', 'accelerator_requests', ['device_profile_id']],
    ['arqs_deployable_idx', 'accelerator_requests', ['deployable_id']],
    ['arqs_hostname_idx', 'accelerator_requests', ['hostname']],
    ['services_last_seen_idx', 'services', ['last_seen']],
  ]
  for (const [name, tableName, columns] of indexes) {
    await db.schema.createIndex(name).on(tableName).columns(columns).execute()
  }
}

export function initialMigration(dialect: DialectName) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await createInventoryTables(dialect, db)
      await createRequestTables(dialect, db)
      await createServiceTables(dialect, db)
      await createIndexes(db)
    },
    async down(db: Kysely<unknown>): Promise<void> {
      for (const name of [
        'agent_drivers',
        'services',
        'accelerator_requests',
        'device_profiles',
        'attach_handles',
        'attributes',
        'deployables',
        'devices',
      ]) {
        await db.schema.dropTable(name).execute()
      }
    },
  }
}
