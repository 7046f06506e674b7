/**
 * The `cleaning` state of attach handles (issue 18, part 2; docs/cleaning.md). A released handle
 * that must be cleaned keeps `in_use = 1`, so that every claim (Nova v2, standalone, v1) skips it
 * with no change to their queries, and carries:
 * - `clean_state`: `pending` (its host's agent has to clean it) or `failed` (the clean failed: the
 *   unit stays out of service until an operator re-cleans it or forces it back);
 * - `clean_since`: when it was released; `clean_attempt_at`: when a conductor last asked the agent;
 * - `clean_allocation_uuid`: the custody record of the interval it ended (the clean record's link).
 */
import type { Kysely } from 'kysely'
import type { DialectName } from '../connection.js'

export const handleCleaningMigration = (dialect: DialectName) => ({
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('attach_handles').addColumn('clean_state', 'varchar(16)').execute()
    await db.schema.alterTable('attach_handles').addColumn('clean_since', 'varchar(40)').execute()
    await db.schema
      .alterTable('attach_handles')
      .addColumn('clean_attempt_at', 'varchar(40)')
      .execute()
    await db.schema
      .alterTable('attach_handles')
      .addColumn('clean_allocation_uuid', 'varchar(36)')
      .execute()
    await db.schema
      .createIndex('attach_handles_clean_state_idx')
      .on('attach_handles')
      .column('clean_state')
      .execute()
  },
  async down(db: Kysely<unknown>): Promise<void> {
    const drop = db.schema.dropIndex('attach_handles_clean_state_idx')
    // MySQL names the table of an index to drop; PostgreSQL and SQLite reject it.
    await (dialect === 'mysql' ? drop.on('attach_handles') : drop).execute()
    for (const column of [
      'clean_allocation_uuid',
      'clean_attempt_at',
      'clean_since',
      'clean_state',
    ])
      await db.schema.alterTable('attach_handles').dropColumn(column).execute()
  },
})
