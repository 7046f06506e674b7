/**
 * The outbox (migration 0009): events are written with `insertEvents` inside the transaction of
 * the change they describe, and the conductor's relay (src/conductor/outbox/event-relay.ts) reads the
 * unsent ones in id order, delivers them, and stamps them sent, holding the relay lock
 * (`withEventRelayLock`) throughout, so that one relay publishes at a time. Sent rows are deleted
 * after a retention period (`deleteSentEvents`).
 */
import { sql, type Kysely, type Selectable } from 'kysely'
import type { EventPriority, NewEvent, StoredEvent } from '../../domain/events.js'
import { canonicalJson } from '../../domain/inventory/inventory.js'
import { dialectOf, type DatabaseHandle, type ReadDb } from '../core/connection.js'
import type { Database, EventsTable } from '../core/schema.js'
import { withLockRow } from '../core/lock-row.js'

/** Rows per multi-row INSERT and ids per IN list: under every driver's parameter limit. */
const CHUNK = 500

/** Transactions that wrote events, until `takeEventsWritten` asks (to wake the relay after COMMIT). */
const written = new WeakSet<object>()

/** Writes events (one multi-row INSERT per 500) in `db`, the transaction of the change. */
export async function insertEvents(db: Kysely<Database>, rows: readonly NewEvent[]): Promise<void> {
  if (rows.length === 0) return
  for (let i = 0; i < rows.length; i += CHUNK) {
    await db
      .insertInto('events')
      .values(
        rows.slice(i, i + CHUNK).map((e) => ({
          uuid: e.uuid,
          event_type: e.eventType,
          priority: e.priority,
          resource_type: e.resourceType,
          resource_uuid: e.resourceUuid,
          project_id: e.projectId,
          payload: canonicalJson(e.payload),
          created_at: e.createdAt,
          sent_at: null,
        })),
      )
      .execute()
  }
  written.add(db)
}

/**
 * Whether `trx` wrote events since the last call (and forgets it): the conductor asks after each
 * write, and wakes the relay once the transaction committed.
 */
export function takeEventsWritten(trx: object): boolean {
  return written.delete(trx)
}

function toEvent(row: Selectable<EventsTable>): StoredEvent {
  return {
    id: Number(row.id),
    uuid: row.uuid,
    eventType: row.event_type,
    priority: row.priority as EventPriority,
    resourceType: row.resource_type,
    resourceUuid: row.resource_uuid,
    projectId: row.project_id,
    payload: JSON.parse(row.payload) as Record<string, unknown>,
    createdAt: row.created_at,
    sentAt: row.sent_at,
  }
}

/** Whether any event waits to be sent (one indexed row at most). */
export async function hasUnsentEvents(db: ReadDb): Promise<boolean> {
  const row = await db
    .selectFrom('events')
    .select('id')
    .where('sent_at', 'is', null)
    .limit(1)
    .executeTakeFirst()
  return row !== undefined
}

/**
 * The oldest unsent events, in id order, at most `limit`. On MariaDB the unsent index is named:
 * after a burst of inserts its statistics may count most rows unsent and choose a primary-key scan
 * for `ORDER BY id LIMIT`, which reads every sent row kept for retention (issue 28).
 */
export async function listUnsentEvents(db: ReadDb, limit: number): Promise<StoredEvent[]> {
  if (dialectOf(db as Kysely<Database>) === 'mysql') {
    const { rows } = await sql<Selectable<EventsTable>>`
      select * from events force index (events_unsent_idx)
      where sent_at is null order by id limit ${limit}`.execute(db)
    return rows.map(toEvent)
  }
  const rows = await db
    .selectFrom('events')
    .selectAll()
    .where('sent_at', 'is', null)
    .orderBy('id')
    .limit(limit)
    .execute()
  return rows.map(toEvent)
}

/** Stamps events sent; returns how many were still unsent. */
export async function markEventsSent(
  db: Kysely<Database>,
  ids: readonly number[],
  now: string,
): Promise<number> {
  let count = 0
  for (let i = 0; i < ids.length; i += CHUNK) {
    const res = await db
      .updateTable('events')
      .set({ sent_at: now })
      .where('id', 'in', ids.slice(i, i + CHUNK))
      .where('sent_at', 'is', null)
      .executeTakeFirst()
    count += Number(res.numUpdatedRows)
  }
  return count
}

/**
 * Deletes up to `limit` events sent before `before`, oldest first; returns how many. By primary
 * key, so that on MariaDB it locks those rows only, never the gap new events go into.
 */
export async function deleteSentEvents(
  db: Kysely<Database>,
  before: string,
  limit = 1000,
): Promise<number> {
  const rows = await db
    .selectFrom('events')
    .select('id')
    .where('sent_at', '<', before)
    .orderBy('sent_at')
    .limit(limit)
    .execute()
  let count = 0
  for (let i = 0; i < rows.length; i += CHUNK) {
    const ids = rows.slice(i, i + CHUNK).map((r) => r.id)
    const res = await db.deleteFrom('events').where('id', 'in', ids).executeTakeFirst()
    count += Number(res.numDeletedRows)
  }
  return count
}

/** Events in id order after position `after`, optionally of one resource or one type. */
export async function listEvents(
  db: ReadDb,
  options: { after?: number; resourceUuid?: string; eventType?: string; limit?: number } = {},
): Promise<StoredEvent[]> {
  let q = db
    .selectFrom('events')
    .selectAll()
    .where('id', '>', options.after ?? 0)
  if (options.resourceUuid !== undefined) q = q.where('resource_uuid', '=', options.resourceUuid)
  if (options.eventType !== undefined) q = q.where('event_type', '=', options.eventType)
  const rows = await q
    .orderBy('id')
    .limit(options.limit ?? 1000)
    .execute()
  return rows.map(toEvent)
}

/** Runs `fn` holding the relay lock (the `event_relay` row), or undefined when another relay holds it (src/db/core/lock-row.ts). */
export function withEventRelayLock<T>(
  handle: DatabaseHandle,
  fn: (db: Kysely<Database>) => Promise<T>,
): Promise<{ value: T } | undefined> {
  return withLockRow(handle, 'event_relay', fn)
}
