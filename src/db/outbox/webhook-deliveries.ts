/**
 * Webhook deliveries (migration 0010): one row per (endpoint, event). The conductor's webhook sink
 * inserts them (an event delivered twice by the relay is queued once), the dispatcher sends each
 * endpoint's pending rows oldest first (webhook-claims.ts records the outcome under its lease),
 * the API lists them (src/db/reads/webhook-delivery-reads.ts), and delivered rows past their retention
 * are deleted.
 */
import type { Kysely } from 'kysely'
import { DeliveryState } from '../../domain/webhooks/webhooks.js'
import { dialectOf, type ReadDb } from '../core/connection.js'
import type { Database } from '../core/schema.js'

/** Rows per multi-row INSERT (9 parameters each, under every driver's limit). */
const CHUNK = 200

/** A delivery to queue. */
export interface NewWebhookDelivery {
  webhookId: number
  eventUuid: string
  eventType: string
  body: string
  createdAt: string
}

/** The oldest pending delivery of an endpoint, as the dispatcher sends it. */
export interface PendingDelivery {
  id: number
  eventUuid: string
  body: string
  attempts: number
  nextAttemptAt: string
}

/**
 * Queues deliveries, due at once, in the order given (which is their delivery order per
 * endpoint). One that exists already (the same endpoint and event) is left as it is. Resolves with
 * how many were new.
 */
export async function insertWebhookDeliveries(
  db: Kysely<Database>,
  rows: readonly NewWebhookDelivery[],
): Promise<number> {
  let inserted = 0
  const mysql = dialectOf(db) === 'mysql'
  for (let i = 0; i < rows.length; i += CHUNK) {
    const values = rows.slice(i, i + CHUNK).map((r) => ({
      webhook_id: r.webhookId,
      event_uuid: r.eventUuid,
      event_type: r.eventType,
      body: r.body,
      state: DeliveryState.Pending,
      attempts: 0,
      next_attempt_at: r.createdAt,
      created_at: r.createdAt,
      finished_at: null,
    }))
    const q = db.insertInto('webhook_deliveries').values(values)
    const res = await (
      mysql
        ? q.ignore()
        : q.onConflict((oc) => oc.columns(['webhook_id', 'event_uuid']).doNothing())
    ).executeTakeFirst()
    inserted += Number(res.numInsertedOrUpdatedRows ?? 0)
  }
  return inserted
}

/** The endpoint's oldest pending deliveries (at most `limit`), due or not, oldest first. */
export async function listPendingDeliveries(
  db: ReadDb,
  webhookId: number,
  limit: number,
): Promise<PendingDelivery[]> {
  const rows = await db
    .selectFrom('webhook_deliveries')
    .select(['id', 'event_uuid', 'body', 'attempts', 'next_attempt_at'])
    .where('webhook_id', '=', webhookId)
    .where('state', '=', DeliveryState.Pending)
    .orderBy('id')
    .limit(limit)
    .execute()
  return rows.map((row) => ({
    id: Number(row.id),
    eventUuid: row.event_uuid,
    body: row.body,
    attempts: Number(row.attempts),
    nextAttemptAt: row.next_attempt_at,
  }))
}

/**
 * Deletes up to `limit` deliveries delivered before `before`, oldest first; resolves with how
 * many. Dead ones stay: they are the dead letters, kept until their endpoint is deleted.
 */
export async function deleteDeliveredBefore(
  db: Kysely<Database>,
  before: string,
  limit = 1000,
): Promise<number> {
  const rows = await db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('state', '=', DeliveryState.Delivered)
    .where('finished_at', '<', before)
    .orderBy('finished_at')
    .limit(limit)
    .execute()
  if (rows.length === 0) return 0
  const res = await db
    .deleteFrom('webhook_deliveries')
    .where(
      'id',
      'in',
      rows.map((r) => r.id),
    )
    .executeTakeFirst()
  return Number(res.numDeletedRows)
}
