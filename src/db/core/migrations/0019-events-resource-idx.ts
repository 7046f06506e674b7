/**
 * `events_resource_idx` on `events (resource_uuid, id)` (issue 32): the reads of one resource's
 * events, newest first — a device's health history on the dashboard (`GET
 * /v2/events?resource_uuid=`), a failed request's reason (`state_reason`, src/db/reads/arq-reasons.ts)
 * — read one index range instead of every event kept for retention (24 h by default).
 */
import type { Kysely } from 'kysely'
import type { DialectName } from '../connection.js'

export const eventsResourceIdxMigration = (dialect: DialectName) => ({
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createIndex('events_resource_idx')
      .on('events')
      .columns(['resource_uuid', 'id'])
      .execute()
  },
  async down(db: Kysely<unknown>): Promise<void> {
    const drop = db.schema.dropIndex('events_resource_idx')
    await (dialect === 'mysql' ? drop.on('events') : drop).execute()
  },
})
