/**
 * Webhook endpoints (migration 0010), written by the conductor (src/conductor/outbox/webhooks.ts):
 * create, change, delete. Reads (the API's, the webhook sink's) are src/db/reads/webhook-reads.ts.
 */
import type { Kysely } from 'kysely'
import { canonicalJson } from '../../domain/inventory/inventory.js'
import type { NewWebhook, Webhook, WebhookChanges } from '../../domain/webhooks/webhooks.js'
import type { Database } from '../core/schema.js'
import { getWebhook, getWebhookId, webhookNotFound } from '../reads/webhook-reads.js'

/** Inserts an endpoint. */
export async function createWebhook(
  db: Kysely<Database>,
  w: NewWebhook & { uuid: string; secret: string; createdAt: string },
): Promise<Webhook> {
  await db
    .insertInto('webhooks')
    .values({
      uuid: w.uuid,
      url: w.url,
      secret: w.secret,
      event_types: canonicalJson(w.eventTypes),
      project_ids: canonicalJson(w.projectIds),
      description: w.description,
      enabled: w.enabled ? 1 : 0,
      created_at: w.createdAt,
      updated_at: null,
    })
    .execute()
  return getWebhook(db, w.uuid)
}

/** Changes an endpoint's fields. @throws NotFoundError (WEBHOOK_NOT_FOUND) */
export async function updateWebhook(
  db: Kysely<Database>,
  uuid: string,
  changes: WebhookChanges,
  now: string,
): Promise<Webhook> {
  const res = await db
    .updateTable('webhooks')
    .set({
      updated_at: now,
      ...(changes.url === undefined ? {} : { url: changes.url }),
      ...(changes.eventTypes === undefined
        ? {}
        : { event_types: canonicalJson(changes.eventTypes) }),
      ...(changes.projectIds === undefined
        ? {}
        : { project_ids: canonicalJson(changes.projectIds) }),
      ...(changes.description === undefined ? {} : { description: changes.description }),
      ...(changes.enabled === undefined ? {} : { enabled: changes.enabled ? 1 : 0 }),
    })
    .where('uuid', '=', uuid)
    .executeTakeFirst()
  if (Number(res.numUpdatedRows) === 0) throw webhookNotFound(uuid)
  return getWebhook(db, uuid)
}

/**
 * Deletes an endpoint and its deliveries (pending, delivered and dead alike).
 * @throws NotFoundError (WEBHOOK_NOT_FOUND)
 */
export async function deleteWebhook(db: Kysely<Database>, uuid: string): Promise<void> {
  const id = await getWebhookId(db, uuid)
  await db.deleteFrom('webhook_deliveries').where('webhook_id', '=', id).execute()
  await db.deleteFrom('webhooks').where('id', '=', id).execute()
}
