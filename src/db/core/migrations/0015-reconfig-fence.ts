/**
 * The reconfiguration fence (issue 19; docs/fpga.md, docs/drivers.md). While an operator programs
 * a deployable or re-partitions a device, its free units are taken out of service the way a clean
 * takes them (`in_use = 1`, so that no claim path takes them, with no change to their queries),
 * and carry:
 * - `reconfig_uuid`: the operation holding them (a program or a configure), so that only it lifts
 *   them, and a report of the host does not count them as held by a tenant;
 * - `reconfig_kind`: `program` or `configure`;
 * - `reconfig_since`: when it took them (a conductor's sweep rediscovers units held too long,
 *   after a crash, and lifts the fence once the agent has answered).
 */
import type { Kysely } from 'kysely'
import type { DialectName } from '../connection.js'

export const reconfigFenceMigration = (dialect: DialectName) => ({
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('attach_handles').addColumn('reconfig_uuid', 'varchar(36)').execute()
    await db.schema.alterTable('attach_handles').addColumn('reconfig_kind', 'varchar(16)').execute()
    await db.schema
      .alterTable('attach_handles')
      .addColumn('reconfig_since', 'varchar(40)')
      .execute()
    await db.schema
      .createIndex('attach_handles_reconfig_uuid_idx')
      .on('attach_handles')
      .column('reconfig_uuid')
      .execute()
  },
  async down(db: Kysely<unknown>): Promise<void> {
    // Units held by an operation that never finished go back in service with the fence gone.
    await db
      .updateTable('attach_handles' as never)
      .set({ in_use: 0 } as never)
      .where('reconfig_uuid' as never, 'is not', null)
      .execute()
    const drop = db.schema.dropIndex('attach_handles_reconfig_uuid_idx')
    await (dialect === 'mysql' ? drop.on('attach_handles') : drop).execute()
    for (const column of ['reconfig_since', 'reconfig_kind', 'reconfig_uuid'])
      await db.schema.alterTable('attach_handles').dropColumn(column).execute()
  },
})
