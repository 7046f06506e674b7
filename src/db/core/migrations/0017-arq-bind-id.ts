/**
 * `accelerator_requests.bind_id` (issue 30; docs/arqs.md, "Redelivered binds"): the key of the bind
 * that last moved the request, one per API request (a uuid the API makes for each PATCH), written
 * by the bind's transaction on every request it moves. A bind delivered again by RabbitMQ after its
 * first run committed (the conductor died or lost its connection before the ack) finds its own key
 * on the requests and answers from them instead of refusing them as already bound. Kept until the
 * next bind of the request overwrites it (null for a bind whose caller sent no key).
 *
 * Requests bound before it have none: a redelivery of their bind was refused before and still is.
 * Undoing it drops the column; only the redelivery check of binds in flight is lost, so it has no
 * downgrade guard.
 */
import type { Kysely } from 'kysely'

export const arqBindIdMigration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('accelerator_requests').addColumn('bind_id', 'varchar(36)').execute()
  },
  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('accelerator_requests').dropColumn('bind_id').execute()
  },
}
