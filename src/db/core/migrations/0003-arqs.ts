/**
 * Binding support: an index over the free attach handles of a deployable, in id order.
 * `claimHandle` (src/db/arqs.ts) reads `WHERE deployable_id = ? AND in_use = 0 ORDER BY id LIMIT 1
 * FOR UPDATE SKIP LOCKED`; with this index InnoDB walks (and locks) only free handles, in order,
 * instead of sorting every handle of the deployable, which would lock them all and make concurrent
 * binders skip handles that are in fact free. On PostgreSQL and SQLite it just makes the read cheap.
 */
import type { Kysely } from 'kysely'
import type { DialectName } from '../connection.js'

export function arqsMigration(dialect: DialectName) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createIndex('attach_handles_free_idx')
        .on('attach_handles')
        .columns(['deployable_id', 'in_use', 'id'])
        .execute()
    },
    async down(db: Kysely<unknown>): Promise<void> {
      const drop = db.schema.dropIndex('attach_handles_free_idx')
      // MySQL names the table of an index to drop; PostgreSQL and SQLite reject it.
      await (dialect === 'mysql' ? drop.on('attach_handles') : drop).execute()
    },
  }
}
