/**
 * The event outbox as the API reads it (`GET /v2/events` and its stream, 2.10; docs/api-v2.md):
 * newest first, or in id order after a position, filtered, and held to what the caller may see.
 * The rows are written by src/db/outbox/events.ts and deleted `[events] retention_hours` after
 * they were sent, so this history is bounded by that retention.
 */
import { sql, type Selectable } from 'kysely'
import type { EventsTable } from '../core/schema.js'
import type { ReadDb } from './read-db.js'

/** One event as the API shows it (the outbox row, snake_case; web/live.ts's `LiveEvent`). */
export interface EventView {
  id: number
  uuid: string
  event_type: string
  priority: string
  resource_type: string
  resource_uuid: string
  project_id: string | null
  payload: Record<string, unknown>
  created_at: string
}

/**
 * What a caller who is not an admin may see: the events that carry its project (an ARQ's), and,
 * with `hardware`, the events that carry no project (devices, deployables, drivers, agents).
 */
export interface EventScope {
  projectId: string
  hardware: boolean
}

export interface EventFilter {
  resourceType?: string | undefined
  resourceUuid?: string | undefined
  /** An exact type, or a prefix when it ends with `.` (`accelerator.device.`). */
  eventType?: string | undefined
  priority?: string | undefined
  projectId?: string | undefined
  /** Undefined: every event (an admin). */
  scope?: EventScope | undefined
}

export function eventView(row: Selectable<EventsTable>): EventView {
  return {
    id: Number(row.id),
    uuid: row.uuid,
    event_type: row.event_type,
    priority: row.priority,
    resource_type: row.resource_type,
    resource_uuid: row.resource_uuid,
    project_id: row.project_id,
    payload: JSON.parse(row.payload) as Record<string, unknown>,
    created_at: row.created_at,
  }
}

function filtered(db: ReadDb, f: EventFilter) {
  let q = db.selectFrom('events').selectAll()
  if (f.resourceType !== undefined) q = q.where('resource_type', '=', f.resourceType)
  if (f.resourceUuid !== undefined) q = q.where('resource_uuid', '=', f.resourceUuid)
  if (f.priority !== undefined) q = q.where('priority', '=', f.priority)
  if (f.projectId !== undefined) q = q.where('project_id', '=', f.projectId)
  const type = f.eventType
  if (type !== undefined && type.endsWith('.')) {
    // substr, not LIKE: SQLite's LIKE ignores case, and `_` would be a wildcard.
    q = q.where(sql<string>`substr(event_type, 1, ${sql.lit(type.length)})`, '=', type)
  } else if (type !== undefined) q = q.where('event_type', '=', type)
  const scope = f.scope
  if (scope !== undefined) {
    q = q.where((eb) =>
      scope.hardware
        ? eb.or([
            eb('project_id', '=', scope.projectId),
            eb.and([eb('project_id', 'is', null), eb('resource_type', '!=', 'arq')]),
          ])
        : eb('project_id', '=', scope.projectId),
    )
  }
  return q
}

/** At most `limit` events newest first, below id `before` when given. */
export async function listEventsNewest(
  db: ReadDb,
  filter: EventFilter,
  page: { before?: number | undefined; limit: number },
): Promise<EventView[]> {
  let q = filtered(db, filter)
  if (page.before !== undefined) q = q.where('id', '<', page.before)
  const rows = await q.orderBy('id', 'desc').limit(page.limit).execute()
  return rows.map(eventView)
}

/** At most `limit` events in id order, above id `after`. */
export async function listEventsAfter(
  db: ReadDb,
  filter: EventFilter,
  page: { after: number; limit: number },
): Promise<EventView[]> {
  const rows = await filtered(db, filter)
    .where('id', '>', page.after)
    .orderBy('id')
    .limit(page.limit)
    .execute()
  return rows.map(eventView)
}

/** The highest event id written so far (0 when there is none). */
export async function latestEventId(db: ReadDb): Promise<number> {
  const row = await db
    .selectFrom('events')
    .select((eb) => eb.fn.max('id').as('id'))
    .executeTakeFirst()
  return Number(row?.id ?? 0)
}

/** The events of these ids that exist, in id order. */
export async function listEventsByIds(db: ReadDb, ids: readonly number[]): Promise<EventView[]> {
  if (ids.length === 0) return []
  const rows = await db
    .selectFrom('events')
    .selectAll()
    .where('id', 'in', [...ids])
    .orderBy('id')
    .execute()
  return rows.map(eventView)
}

/** Whether `e` passes `f`: the same test as the queries above, for events already read. */
export function eventMatches(f: EventFilter, e: EventView): boolean {
  if (f.resourceType !== undefined && e.resource_type !== f.resourceType) return false
  if (f.resourceUuid !== undefined && e.resource_uuid !== f.resourceUuid) return false
  if (f.priority !== undefined && e.priority !== f.priority) return false
  if (f.projectId !== undefined && e.project_id !== f.projectId) return false
  const type = f.eventType
  if (
    type !== undefined &&
    !(type.endsWith('.') ? e.event_type.startsWith(type) : e.event_type === type)
  )
    return false
  const scope = f.scope
  if (scope === undefined || e.project_id === scope.projectId) return true
  return scope.hardware && e.project_id === null && e.resource_type !== 'arq'
}
