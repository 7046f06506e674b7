/**
 * `arq_instances`: one row per instance that a bind has named, used only as a lock. A bind upserts
 * its instances' rows first, so two binds for one instance (even through two conductors) run one
 * after the other, and the second sees the first's requests and is refused (INSTANCE_ALREADY_BOUND).
 * The reaper deletes rows that no request names any more.
 */
import type { Kysely } from 'kysely'

export const arqInstancesMigration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable('arq_instances')
      .addColumn('instance_uuid', 'varchar(36)', (c) => c.primaryKey())
      .addColumn('updated_at', 'varchar(40)', (c) => c.notNull())
      .execute()
  },
  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('arq_instances').execute()
  },
}
