/**
 * Webhooks (docs/webhooks.md), admin only: `POST /webhooks` → 201 with the secret (shown this
 * once), `GET /webhooks`, `GET|PATCH|DELETE /webhooks/{uuid}`, and
 * `GET /webhooks/{uuid}/deliveries[?state=pending|delivered|dead&limit=&marker=]`. Reads come
 * from the database (never the secret); writes go to the conductor. A malformed uuid is a 404.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import {
  countWebhookDeliveries,
  listWebhookDeliveries,
} from '../../db/reads/webhook-delivery-reads.js'
import { getWebhook, getWebhookId, listWebhooks } from '../../db/reads/webhook-reads.js'
import { NotFoundError } from '../../domain/errors.js'
import { isUuidLike } from '../../domain/ids.js'
import {
  parseWebhookChanges,
  parseWebhookCreate,
  type CreatedWebhook,
  type DeliveryState,
  type Webhook,
  type WebhookDelivery,
} from '../../domain/webhooks/webhooks.js'
import { selfLink, type Link } from '../links.js'
import { markerNotFoundToInvalid } from '../query.js'
import type { QueryOf } from '../schemas/common.js'
import { resource } from '../routing.js'
import type { V2Env } from './env.js'
import * as docs from './schemas/webhooks.js'

function webhookView(w: Webhook | CreatedWebhook, base: string) {
  return {
    uuid: w.uuid,
    url: w.url,
    event_types: w.eventTypes,
    project_ids: w.projectIds,
    description: w.description,
    enabled: w.enabled,
    created_at: w.createdAt,
    updated_at: w.updatedAt,
    ...('secret' in w ? { secret: w.secret } : {}),
    links: [selfLink(base, 'webhooks', w.uuid)] as Link[],
  }
}

function deliveryView(d: WebhookDelivery) {
  return {
    event_uuid: d.eventUuid,
    event_type: d.eventType,
    state: d.state,
    attempts: d.attempts,
    next_attempt_at: d.state === 'pending' ? d.nextAttemptAt : null,
    last_attempt_at: d.lastAttemptAt,
    last_status: d.lastStatus,
    last_error: d.lastError,
    created_at: d.createdAt,
    finished_at: d.finishedAt,
  }
}

const notFound = (uuid: string) =>
  new NotFoundError(`webhook ${uuid} not found`, { code: 'WEBHOOK_NOT_FOUND', details: { uuid } })

/** The path's uuid, lower-cased; a malformed one is answered like an unknown one. */
function uuidOf(request: FastifyRequest): string {
  const { uuid } = request.params as { uuid: string }
  if (!isUuidLike(uuid)) throw notFound(uuid)
  return uuid.toLowerCase()
}

function deliveryQuery(query: QueryOf<typeof docs.DeliveriesQuery>) {
  return {
    ...(query.state === undefined ? {} : { state: query.state as DeliveryState }),
    ...(query.limit === undefined ? {} : { limit: Number(query.limit) }),
    ...(query.marker === undefined ? {} : { marker: query.marker.toLowerCase() }),
  }
}

export function webhookRoutes(app: FastifyInstance, { db, conductor, baseUrl }: V2Env): void {
  resource(app, '/webhooks', {
    GET: {
      policy: 'cyborg:webhook:get_all',
      doc: docs.listWebhooks,
      handler: async (request) => {
        const base = baseUrl(request)
        return { webhooks: (await listWebhooks(db)).map((w) => webhookView(w, base)) }
      },
    },
    POST: {
      policy: 'cyborg:webhook:create',
      doc: docs.createWebhook,
      handler: async (request, reply) => {
        const created = await conductor.createWebhook(parseWebhookCreate(request.body))
        return reply.code(201).send(webhookView(created, baseUrl(request)))
      },
    },
  })

  resource(app, '/webhooks/:uuid', {
    GET: {
      policy: 'cyborg:webhook:get_one',
      doc: docs.getWebhook,
      handler: async (request) => {
        const uuid = uuidOf(request)
        const view = webhookView(await getWebhook(db, uuid), baseUrl(request))
        const counts = await countWebhookDeliveries(db, await getWebhookId(db, uuid))
        return { ...view, deliveries: counts }
      },
    },
    PATCH: {
      policy: 'cyborg:webhook:update',
      doc: docs.updateWebhook,
      handler: async (request) => {
        const uuid = uuidOf(request)
        const changes = parseWebhookChanges(request.body)
        return webhookView(await conductor.updateWebhook({ uuid, ...changes }), baseUrl(request))
      },
    },
    DELETE: {
      policy: 'cyborg:webhook:delete',
      doc: docs.deleteWebhook,
      handler: async (request, reply) => {
        await conductor.deleteWebhook({ uuid: uuidOf(request) })
        return reply.code(204).send()
      },
    },
  })

  resource(app, '/webhooks/:uuid/deliveries', {
    GET: {
      policy: 'cyborg:webhook:get_deliveries',
      doc: docs.listDeliveries,
      handler: async (request) => {
        const options = deliveryQuery(request.query as QueryOf<typeof docs.DeliveriesQuery>)
        const id = await getWebhookId(db, uuidOf(request))
        const deliveries = await listWebhookDeliveries(db, id, options).catch((err: unknown) => {
          throw markerNotFoundToInvalid(err)
        })
        return { deliveries: deliveries.map(deliveryView) }
      },
    },
  })
}
