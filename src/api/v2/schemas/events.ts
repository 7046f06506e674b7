/** The documentation of `/v2/events` and `/v2/events/stream` (src/api/v2/events.ts, 2.10). */
import { Type } from '@sinclair/typebox'
import {
  guarded,
  NullableString,
  QueryString,
  stringEnum,
  Timestamp,
  Uuid,
  type RouteDoc,
} from '../../schemas/common.js'

const tags = ['events']

export const RESOURCE_TYPES = ['device', 'deployable', 'arq', 'driver', 'agent'] as const
export const PRIORITIES = ['INFO', 'ERROR'] as const

/** One event: the outbox row (docs/notifications.md "Events"), as web/live.ts's `LiveEvent`. */
export const EventView = Type.Object({
  id: Type.Integer({ description: 'Position in the outbox (increasing); the stream’s `id:`' }),
  uuid: Uuid,
  event_type: Type.String({ description: '`accelerator.<resource>.<action>`' }),
  priority: stringEnum(PRIORITIES),
  resource_type: stringEnum(RESOURCE_TYPES),
  resource_uuid: Type.String({
    description: "The resource's uuid; an agent's is its host name, a driver's `<host>:<driver>`",
  }),
  project_id: NullableString,
  payload: Type.Record(Type.String(), Type.Unknown(), {
    description: 'The versioned payload (docs/notifications.md)',
  }),
  created_at: Timestamp,
})

const EVENT_ID = '^(0|[1-9][0-9]{0,14})$'
const anId = (description: string) =>
  Type.Optional(
    QueryString(
      { pattern: EVENT_ID, description },
      'must be an event id (an integer ≥ 0), got {value}',
    ),
  )

const filters = {
  resource_type: Type.Optional(stringEnum(RESOURCE_TYPES)),
  resource_uuid: Type.Optional(
    QueryString(
      { minLength: 1, maxLength: 255, description: "The resource's uuid (an agent: its host)" },
      'must not be empty',
    ),
  ),
  event_type: Type.Optional(
    QueryString(
      {
        pattern: '^[a-z0-9_.]{1,64}$',
        description:
          'An exact type (`accelerator.device.health_changed`), or a prefix ending with `.` (`accelerator.device.`)',
      },
      'must be an event type or a prefix ending with "." (lower case letters, digits, "_" and "."), got {value}',
    ),
  ),
  priority: Type.Optional(stringEnum(PRIORITIES)),
  project_id: Type.Optional(
    QueryString(
      { minLength: 1, description: 'Events of this project (an admin: any)' },
      'must not be empty',
    ),
  ),
}

export const ListEventsQuery = Type.Object({
  ...filters,
  limit: Type.Optional(
    QueryString(
      { pattern: '^[1-9][0-9]{0,8}$', description: 'Page size: default 100, at most 1000' },
      'must be a positive integer, got {value}',
    ),
  ),
  marker: anId('Newest first, below this event id (the last id of the previous page)'),
  since: anId('In id order, above this event id (resume after the last one seen)'),
})

export const StreamEventsQuery = Type.Object({
  ...filters,
  since: anId('Start after this event id (as the Last-Event-ID header; the header wins)'),
})

const visibility =
  'An admin sees every event; anyone else the events of their own project (accelerator ' +
  'requests), and, when `cyborg:device:get_all` allows them, the events of the shared hardware ' +
  '(devices, deployables, drivers, agents). Naming another project is a 403. Sent events are ' +
  'kept `[events] retention_hours` (default 24), so this history goes back that far at most.'

export const listEvents: RouteDoc = {
  summary: 'Events of the outbox (2.10)',
  description:
    'Newest first (page down with `marker`, the last id seen), or with `since` in id order ' +
    'above that id. ' +
    visibility +
    ' Below 2.10 the route answers 404 naming the microversion it needs.',
  tags,
  querystring: ListEventsQuery,
  response: {
    200: Type.Object({ events: Type.Array(EventView) }),
    ...guarded(400, 403, 404, 406),
  },
}

export const streamEvents: RouteDoc = {
  summary: 'The events as server-sent events (2.10)',
  description:
    '`text/event-stream`: one message per event, `id: <event id>`, `event: <event_type>`, ' +
    '`data: <the event as GET /v2/events shows it>`; a comment line every 15 s. Starts after ' +
    'the `Last-Event-ID` header or `since`, else at the newest event when it connects. Same ' +
    'filters as the list. ' +
    visibility,
  tags,
  querystring: StreamEventsQuery,
  response: {
    200: Type.String({ description: 'text/event-stream' }),
    ...guarded(400, 403, 404, 406),
  },
}
