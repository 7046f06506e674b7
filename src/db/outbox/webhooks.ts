/**
 * Webhook endpoints (migration 0010): written by the conductor (src/conductor/outbox/webhooks.ts), read
 * by the API and by the webhook sink. Reads never return the secret; only the dispatcher's claim
 * (webhook-claims.ts) does.
 */
import type { Kysely, Selectable } from 'kysely'
import { NotFoundError } from '../../domain/errors.js'
import { canonicalJson } from '../../domain/inventory/inventory.js'
import type { NewWebhook, Webhook, WebhookChanges } from '../../domain/webhooks/webhooks.js'
import type { ReadDb } from '../core/connection.js'
import type { Database, WebhooksTable } from '../core/schema.js'

/** Every column but the secret and the dispatcher's own. */
const COLUMNS = [
  'id',
  'uuid',
  'url',
  'event_types',
  'project_ids',
  'description',
  'enabled',
  'created_at',
  'updated_at',
] as const
type WebhookRow = Pick<Selectable<WebhooksTable>, (typeof COLUMNS)[number]>

/** An endpoint with its row id, for the sink's fan-out. */
export interface WebhookTarget extends Webhook {
  id: number
}

function toWebhook(row: WebhookRow): WebhookTarget {
  return {
    id: Number(row.id),
    uuid: row.uuid,
    url: row.url,
    eventTypes: JSON.parse(row.event_types) as string[],
    projectIds: JSON.parse(row.project_ids) as string[],
    description: row.description,
    enabled: Number(row.enabled) === 1,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

const withoutId = ({ id: _id, ...w }: WebhookTarget): Webhook => w

const notFound = (uuid: string) =>
  new NotFoundError(`webhook ${uuid} not found`, { code: 'WEBHOOK_NOT_FOUND', details: { uuid } })

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

/** One endpoint by uuid. @throws NotFoundError (WEBHOOK_NOT_FOUND) */
export async function getWebhook(db: ReadDb, uuid: string): Promise<Webhook> {
  const row = await db
    .selectFrom('webhooks')
    .select(COLUMNS)
    .where('uuid', '=', uuid)
    .executeTakeFirst()
  if (!row) throw notFound(uuid)
  return withoutId(toWebhook(row))
}

/** The row id of an endpoint, for its deliveries. @throws NotFoundError (WEBHOOK_NOT_FOUND) */
export async function getWebhookId(db: ReadDb, uuid: string): Promise<number> {
  const row = await db
    .selectFrom('webhooks')
    .select('id')
    .where('uuid', '=', uuid)
    .executeTakeFirst()
  if (!row) throw notFound(uuid)
  return Number(row.id)
}

/** Every endpoint, oldest first. */
export async function listWebhooks(db: ReadDb): Promise<Webhook[]> {
  const rows = await db.selectFrom('webhooks').select(COLUMNS).orderBy('id').execute()
  return rows.map((r) => withoutId(toWebhook(r)))
}

/** The enabled endpoints with their row ids, in id order: whom the sink fans events out to. */
export async function listWebhookTargets(db: ReadDb): Promise<WebhookTarget[]> {
  const rows = await db
    .selectFrom('webhooks')
    .select(COLUMNS)
    .where('enabled', '=', 1)
    .orderBy('id')
    .execute()
  return rows.map(toWebhook)
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
  if (Number(res.numUpdatedRows) === 0) throw notFound(uuid)
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
