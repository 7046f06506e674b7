/** The documentation of `/v2/webhooks` (src/api/v2/webhooks.ts); bodies are checked by src/domain/webhooks/webhooks.ts. */
import { Type } from '@sinclair/typebox'
import {
  DELIVERY_STATES,
  EVENT_TYPES,
  WEBHOOK_LIST_MAX,
  WEBHOOK_TEXT_MAX,
  WEBHOOK_URL_MAX,
} from '../../../domain/webhooks/webhooks.js'
import {
  guarded,
  guardedWrite,
  Links,
  NoBody,
  NullableString,
  NullableTimestamp,
  nullable,
  QueryString,
  stringEnum,
  Timestamp,
  Uuid,
  UuidParams,
  type RouteDoc,
} from '../../schemas/common.js'

const tags = ['webhooks']

const Webhook = Type.Object({
  uuid: Uuid,
  url: Type.String({ format: 'uri' }),
  event_types: Type.Array(Type.String()),
  project_ids: Type.Array(Type.String()),
  description: NullableString,
  enabled: Type.Boolean(),
  created_at: Timestamp,
  updated_at: NullableTimestamp,
  links: Links,
})

const fields = {
  url: Type.String({ format: 'uri', maxLength: WEBHOOK_URL_MAX, description: 'http or https' }),
  event_types: Type.Array(Type.String(), {
    maxItems: WEBHOOK_LIST_MAX,
    description: `Event types (${EVENT_TYPES.join(', ')}) or prefixes such as accelerator.arq.*; none: every event`,
  }),
  project_ids: Type.Array(Type.String(), {
    maxItems: WEBHOOK_LIST_MAX,
    description: 'Only the events of these projects; none: every project',
  }),
  description: nullable(Type.String({ maxLength: WEBHOOK_TEXT_MAX })),
  enabled: Type.Boolean(),
}

const WebhookCreate = Type.Object(
  {
    url: fields.url,
    event_types: Type.Optional(fields.event_types),
    project_ids: Type.Optional(fields.project_ids),
    description: Type.Optional(fields.description),
    enabled: Type.Optional(fields.enabled),
  },
  { additionalProperties: false },
)

const WebhookChanges = Type.Partial(Type.Object(fields), {
  additionalProperties: false,
  minProperties: 1,
})

const Counts = Type.Object(
  Object.fromEntries(DELIVERY_STATES.map((s) => [s, Type.Integer()])) as Record<
    string,
    ReturnType<typeof Type.Integer>
  >,
)

const Delivery = Type.Object({
  event_uuid: Uuid,
  event_type: Type.String(),
  state: stringEnum(DELIVERY_STATES),
  attempts: Type.Integer(),
  next_attempt_at: NullableTimestamp,
  last_attempt_at: NullableTimestamp,
  last_status: nullable(Type.Integer()),
  last_error: NullableString,
  created_at: Timestamp,
  finished_at: NullableTimestamp,
})

export const listWebhooks: RouteDoc = {
  summary: 'List webhooks (admin)',
  tags,
  response: { 200: Type.Object({ webhooks: Type.Array(Webhook) }), ...guarded(406) },
}

export const createWebhook: RouteDoc = {
  summary: 'Register a webhook; the answer shows its signing secret this once',
  tags,
  body: WebhookCreate,
  response: {
    201: Type.Composite([Webhook, Type.Object({ secret: Type.String() })]),
    ...guardedWrite(406, 409),
  },
}

export const getWebhook: RouteDoc = {
  summary: 'Show a webhook with its delivery counts',
  tags,
  params: UuidParams,
  response: {
    200: Type.Composite([Webhook, Type.Object({ deliveries: Counts })]),
    ...guarded(404, 406),
  },
}

export const updateWebhook: RouteDoc = {
  summary: 'Change a webhook',
  tags,
  params: UuidParams,
  body: WebhookChanges,
  response: { 200: Webhook, ...guardedWrite(404, 406, 409) },
}

export const deleteWebhook: RouteDoc = {
  summary: 'Delete a webhook',
  tags,
  params: UuidParams,
  response: { 204: NoBody('Deleted'), ...guarded(404, 406, 409) },
}

/** The largest page of deliveries. */
export const DELIVERIES_MAX_PAGE = 1000

export const DeliveriesQuery = Type.Object({
  state: Type.Optional(stringEnum(DELIVERY_STATES)),
  limit: Type.Optional(
    QueryString(
      { pattern: '^(?:[1-9][0-9]{0,2}|1000)$', description: '1-1000; 100 by default' },
      `must be an integer 1-${DELIVERIES_MAX_PAGE}, got {value}`,
    ),
  ),
  marker: Type.Optional(QueryString({ description: 'The event uuid of the last delivery shown' })),
})

export const listDeliveries: RouteDoc = {
  summary: "List a webhook's deliveries",
  tags,
  params: UuidParams,
  querystring: DeliveriesQuery,
  response: { 200: Type.Object({ deliveries: Type.Array(Delivery) }), ...guarded(400, 404, 406) },
}
