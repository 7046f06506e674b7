/**
 * `accelerator_requests.bound_at` (issue 27; docs/custody.md): when the request's bind committed,
 * written by the transition to Bound (src/db/arqs.ts `updateArqStates`) and by a v1 attach bound at
 * once, kept while the request is UnbindFailed or Deleting, cleared when it lets go. The custody
 * ledger's allocation record takes its `bound_at` from it: `updated_at` moves with any later
 * change (a delete's Deleting step), so it is not the bind time.
 *
 * Requests Bound when it is applied get their `updated_at`, the best time known then; undoing it
 * drops the column (the ledger's records keep their times; requests bound meanwhile fall back to
 * what the old code recorded), so it has no downgrade guard.
 */
import { sql, type Kysely } from 'kysely'

export const arqBoundAtMigration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .alterTable('accelerator_requests')
      .addColumn('bound_at', 'varchar(40)')
      .execute()
    await sql`update accelerator_requests set bound_at = updated_at
      where state = 'Bound' and updated_at is not null`.execute(db)
    await sql`update accelerator_requests set bound_at = created_at
      where state = 'Bound' and updated_at is null`.execute(db)
  },
  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('accelerator_requests').dropColumn('bound_at').execute()
  },
}
