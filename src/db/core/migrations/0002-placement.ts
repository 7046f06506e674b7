/**
 * Placement sync state on deployables:
 * - `placement_hash`: hash of the provider state (name, parent, inventory, traits) last confirmed
 *   written to Placement; null = not in Placement. Lets a report send only what changed.
 * - `removal_pending`: 1 when the deployable vanished from its host's report but cannot go yet
 *   (an ARQ holds it, or its provider still has allocations in Placement). Removed once freed.
 */
import type { Kysely } from 'kysely'

export const placementMigration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('deployables').addColumn('placement_hash', 'varchar(64)').execute()
    await db.schema
      .alterTable('deployables')
      .addColumn('removal_pending', 'integer', (c) => c.notNull().defaultTo(0))
      .execute()
  },
  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('deployables').dropColumn('removal_pending').execute()
    await db.schema.alterTable('deployables').dropColumn('placement_hash').execute()
  },
}
