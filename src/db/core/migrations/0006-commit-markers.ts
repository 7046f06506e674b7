/**
 * `commit_markers`: how the group committer (src/db/core/group-commit.ts) learns whether a transaction
 * whose COMMIT answer was lost did commit. Each transaction inserts one row with an id made before
 * it began, as its last statement; after a failed COMMIT the committer inserts the same id again on
 * another connection: a duplicate means the transaction committed. Rows whose outcome is known are
 * deleted soon after, and any older than a day (a committer that died) by the next committer's sweep.
 */
import type { Kysely } from 'kysely'

export const commitMarkersMigration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable('commit_markers')
      .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
      .addColumn('created_at', 'varchar(40)', (c) => c.notNull())
      .execute()
    await db.schema
      .createIndex('commit_markers_created_idx')
      .on('commit_markers')
      .column('created_at')
      .execute()
  },
  async down(db: Kysely<unknown>): Promise<void> {
    // Dropping the table drops its index on every database.
    await db.schema.dropTable('commit_markers').execute()
  },
}
