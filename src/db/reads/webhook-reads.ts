/**
 * Webhook endpoints (migration 0010), read: by uuid, every one (the API), the enabled ones with their
 * row ids (the conductor's webhook sink). Reads never return the secret; only the dispatcher's claim
 * (src/db/outbox/webhook-claims.ts) does. Writes are src/db/outbox/webhooks.ts.
 */
import type { Selectable } from 'kysely'
import { NotFoundError } from '../../domain/errors.js'
import type { Webhook } from '../../domain/webhooks/webhooks.js'
import type { ReadDb } from '../core/connection.js'
import type { WebhooksTable } from '../core/schema.js'

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

/** The NotFoundError (WEBHOOK_NOT_FOUND) of a missing endpoint; updateWebhook throws it too. */
export const webhookNotFound = (uuid: string) =>
  new NotFoundError(`webhook ${uuid} not found`, { code: 'WEBHOOK_NOT_FOUND', details: { uuid } })

/** One endpoint by uuid. @throws NotFoundError (WEBHOOK_NOT_FOUND) */
export async function getWebhook(db: ReadDb, uuid: string): Promise<Webhook> {
  const row = await db
    .selectFrom('webhooks')
    .select(COLUMNS)
    .where('uuid', '=', uuid)
    .executeTakeFirst()
  if (!row) throw webhookNotFound(uuid)
  return withoutId(toWebhook(row))
}

/** The row id of an endpoint, for its deliveries. @throws NotFoundError (WEBHOOK_NOT_FOUND) */
export async function getWebhookId(db: ReadDb, uuid: string): Promise<number> {
  const row = await db
    .selectFrom('webhooks')
    .select('id')
    .where('uuid', '=', uuid)
    .executeTakeFirst()
  if (!row) throw webhookNotFound(uuid)
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
