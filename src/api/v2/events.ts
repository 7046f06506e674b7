/**
 * The events of the outbox (2.10, docs/api-v2.md "Events"): `GET /events` (a page of history)
 * and `GET /events/stream` (server-sent events, fed by the process's one poller,
 * ./event-hub.ts). Who sees what: an admin every event; anyone else their own project's (ARQ
 * events), and the shared hardware's (device, deployable, driver, agent events) when
 * `cyborg:device:get_all` allows them, as for `GET /v2/devices`.
 */
import type { FastifyRequest } from 'fastify'
import type { FastifyInstance } from 'fastify'
import {
  listEventsAfter,
  listEventsNewest,
  type EventFilter,
  type EventScope,
} from '../../db/reads/event-reads.js'
import { invalidField } from '../../domain/errors.js'
import { refuseOtherProject } from '../../domain/request-context.js'
import type { QueryOf } from '../schemas/common.js'
import { resource } from '../routing.js'
import type { V2Env } from './env.js'
import { openEventStream } from './event-stream.js'
import * as docs from './schemas/events.js'

const DEFAULT_LIMIT = 100
const MAX_LIMIT = 1000

type Filters = QueryOf<typeof docs.StreamEventsQuery>

/** What a caller who is not an admin may see (undefined: an admin, everything). */
function scopeOf(
  request: FastifyRequest,
  env: V2Env,
  asked: string | undefined,
): EventScope | undefined {
  const { ctx } = request
  if (ctx.isAdmin) return undefined
  refuseOtherProject(ctx, asked, 'read the events')
  let hardware = true
  try {
    env.enforcer.enforce('cyborg:device:get_all', ctx)
  } catch {
    hardware = false
  }
  return { projectId: ctx.projectId ?? '', hardware }
}

/** The checked query's filters, held to what the caller may see. */
export function filterOf(request: FastifyRequest, env: V2Env, q: Filters): EventFilter {
  return {
    resourceType: q.resource_type,
    resourceUuid: q.resource_uuid,
    eventType: q.event_type,
    priority: q.priority,
    projectId: q.project_id,
    scope: scopeOf(request, env, q.project_id),
  }
}

export function eventRoutes(app: FastifyInstance, env: V2Env): void {
  resource(app, '/events', {
    GET: {
      policy: 'cyborg:event:get_all',
      doc: docs.listEvents,
      since: 10,
      handler: async (request) => {
        const q = request.query as QueryOf<typeof docs.ListEventsQuery>
        const limit = q.limit === undefined ? DEFAULT_LIMIT : Number(q.limit)
        if (limit > MAX_LIMIT)
          throw invalidField('limit', `must be at most ${MAX_LIMIT}, got ${q.limit}`)
        if (q.marker !== undefined && q.since !== undefined)
          throw invalidField('since', 'give marker (newest first) or since (in id order), not both')
        const filter = filterOf(request, env, q)
        const events =
          q.since === undefined
            ? await listEventsNewest(env.db, filter, {
                before: q.marker === undefined ? undefined : Number(q.marker),
                limit,
              })
            : await listEventsAfter(env.db, filter, { after: Number(q.since), limit })
        return { events }
      },
    },
  })

  resource(app, '/events/stream', {
    GET: {
      policy: 'cyborg:event:stream',
      doc: docs.streamEvents,
      since: 10,
      handler: async (request, reply) => {
        const q = request.query as Filters
        const header = request.headers['last-event-id']
        let cursor: number | undefined
        if (typeof header === 'string' && header.trim() !== '') {
          if (!/^(0|[1-9][0-9]{0,14})$/.test(header.trim()))
            throw invalidField(
              'Last-Event-ID',
              `must be an event id, got ${JSON.stringify(header)}`,
            )
          cursor = Number(header.trim())
        } else if (q.since !== undefined) cursor = Number(q.since)
        await openEventStream(request, reply, env, filterOf(request, env, q), cursor)
      },
    },
  })
}
