/**
 * Webhook deliveries (migration 0010), read as the API shows them: an endpoint's deliveries in
 * delivery order, and how many are in each state. Queuing, sending and pruning them is
 * src/db/outbox/webhook-deliveries.ts.
 */
import type { Selectable } from 'kysely'
import { NotFoundError } from '../../domain/errors.js'
import type { DeliveryState as State, WebhookDelivery } from '../../domain/webhooks/webhooks.js'
import type { ReadDb } from '../core/connection.js'
import type { WebhookDeliveriesTable } from '../core/schema.js'

function toDelivery(row: Selectable<WebhookDeliveriesTable>): WebhookDelivery {
  return {
    eventUuid: row.event_uuid,
    eventType: row.event_type,
    state: row.state as State,
    attempts: Number(row.attempts),
    nextAttemptAt: row.next_attempt_at,
    lastAttemptAt: row.last_attempt_at,
    lastStatus: row.last_status === null ? null : Number(row.last_status),
    lastError: row.last_error,
    createdAt: row.created_at,
    finishedAt: row.finished_at,
  }
}

/**
 * An endpoint's deliveries in delivery order, optionally in one state, after the delivery of event
 * `marker`, at most `limit`.
 * @throws NotFoundError (details.field = 'marker') for a marker that is not among them
 */
export async function listWebhookDeliveries(
  db: ReadDb,
  webhookId: number,
  options: { state?: State; marker?: string; limit?: number } = {},
): Promise<WebhookDelivery[]> {
  let after = 0
  if (options.marker !== undefined) {
    const row = await db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('webhook_id', '=', webhookId)
      .where('event_uuid', '=', options.marker)
      .executeTakeFirst()
    if (!row)
      throw new NotFoundError(`no delivery of event ${options.marker}`, {
        details: { field: 'marker', marker: options.marker },
      })
    after = Number(row.id)
  }
  let q = db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('webhook_id', '=', webhookId)
    .where('id', '>', after)
  if (options.state !== undefined) q = q.where('state', '=', options.state)
  const rows = await q
    .orderBy('id')
    .limit(options.limit ?? 100)
    .execute()
  return rows.map(toDelivery)
}

/** How many deliveries of an endpoint are in each state. */
export async function countWebhookDeliveries(
  db: ReadDb,
  webhookId: number,
): Promise<Record<State, number>> {
  const rows = await db
    .selectFrom('webhook_deliveries')
    .select(['state', (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('webhook_id', '=', webhookId)
    .groupBy('state')
    .execute()
  const out: Record<State, number> = { pending: 0, delivered: 0, dead: 0 }
  for (const r of rows) out[r.state as State] = Number(r.n)
  return out
}
