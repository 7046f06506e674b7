/**
 * `quota_projects`: one row per project a quota-checked bind or attach has named, used only as a
 * lock (docs/quota.md). A bind upserts its project's row before it counts the project's usage, so
 * two binds of one project (even through two conductors) count one after the other and cannot
 * both take the last unit.
 */
import type { Kysely } from 'kysely'

export const quotaProjectsMigration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable('quota_projects')
      .addColumn('project_id', 'varchar(64)', (c) => c.primaryKey())
      .addColumn('updated_at', 'varchar(40)', (c) => c.notNull())
      .execute()
  },
  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('quota_projects').execute()
  },
}
