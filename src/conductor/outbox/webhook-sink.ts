/**
 * The webhook sink (docs/webhooks.md): the event relay hands it each batch of outbox events, and
 * it queues one `webhook_deliveries` row per (enabled endpoint that wants the event, event), all
 * in one transaction, then wakes the dispatcher. It never calls a receiver: a slow or dead one
 * delays nothing here. When no endpoint is registered a batch costs one indexed read.
 *
 * At least once, and once per endpoint: the relay may hand the same events again (it died before
 * stamping them sent); the rows exist already and stay as they are. Rows are written per endpoint,
 * endpoints in id order (the order the dispatcher's claims lock them in), events in outbox order
 * within each, so that each endpoint's deliveries go out in the order of the events.
 */
import type { DatabaseHandle } from '../../db/core/connection.js'
import {
  insertWebhookDeliveries,
  type NewWebhookDelivery,
} from '../../db/outbox/webhook-deliveries.js'
import { listWebhookTargets, type WebhookTarget } from '../../db/reads/webhook-reads.js'
import { webhookBody } from '../../domain/webhooks/webhook-signature.js'
import { webhookWants } from '../../domain/webhooks/webhooks.js'
import type { EventSink, OutboxEvent } from './event-sinks.js'

export interface WebhookSinkDeps {
  db: DatabaseHandle
  now: () => string
  /** Called after new deliveries were queued (the dispatcher's `wake`). */
  onQueued?: () => void
}

/** The deliveries `events` make for the enabled endpoints `targets`, in delivery order. */
export function fanOut(
  targets: readonly WebhookTarget[],
  events: readonly OutboxEvent[],
  createdAt: string,
): NewWebhookDelivery[] {
  const rows: NewWebhookDelivery[] = []
  const bodies = new Map<OutboxEvent, string>()
  for (const target of targets) {
    for (const event of events) {
      if (!webhookWants(target, event)) continue
      let body = bodies.get(event)
      if (body === undefined) bodies.set(event, (body = webhookBody(event)))
      rows.push({
        webhookId: target.id,
        eventUuid: event.uuid,
        eventType: event.eventType,
        body,
        createdAt,
      })
    }
  }
  return rows
}

export function createWebhookSink({ db, now, onQueued }: WebhookSinkDeps): EventSink {
  return {
    name: 'webhooks',
    async deliver(events) {
      if (events.length === 0) return
      const targets = await listWebhookTargets(db.db)
      if (targets.length === 0) return
      const rows = fanOut(targets, events, now())
      if (rows.length === 0) return
      const inserted = await db.db
        .transaction()
        .execute((trx) => insertWebhookDeliveries(trx, rows))
      if (inserted > 0) onQueued?.()
    },
  }
}
