/**
 * Recorded health transitions (migration 0008): one row per change of a device's health state,
 * written in the transaction that changes it (report ingestion, the lease sweep), numbered so that
 * a publisher (the events issue) can resume after the last row it sent.
 */
import type { Kysely } from 'kysely'
import type { ReadDb } from './connection.js'
import type { Database } from './schema.js'

/** One change of a device's health. `from` is `new` for a device that arrived unhealthy. */
export interface HealthTransition {
  deviceUuid: string
  hostname: string
  from: string
  to: string
  reason: string | null
  createdAt: string
}

/** A recorded transition, with its sequence number. */
export interface RecordedHealthTransition extends HealthTransition {
  id: number
}

const CHUNK = 500

/** Inserts transitions (chunked multi-row INSERTs). */
export async function insertHealthTransitions(
  db: Kysely<Database>,
  rows: readonly HealthTransition[],
): Promise<void> {
  for (let i = 0; i < rows.length; i += CHUNK) {
    await db
      .insertInto('health_transitions')
      .values(
        rows.slice(i, i + CHUNK).map((t) => ({
          device_uuid: t.deviceUuid,
          hostname: t.hostname,
          from_health: t.from,
          to_health: t.to,
          reason: t.reason === null ? null : t.reason.slice(0, 255),
          created_at: t.createdAt,
        })),
      )
      .execute()
  }
}

/** Records changes named by device id (one read of their uuids); returns what was recorded. */
export async function recordHealthChanges(
  db: Kysely<Database>,
  host: string,
  changes: readonly { deviceId: number; from: string; to: string; reason: string | null }[],
  now: string,
): Promise<HealthTransition[]> {
  if (changes.length === 0) return []
  const uuids = new Map<number, string>()
  for (let i = 0; i < changes.length; i += CHUNK) {
    const ids = changes.slice(i, i + CHUNK).map((c) => c.deviceId)
    const rows = await db
      .selectFrom('devices')
      .select(['id', 'uuid'])
      .where('id', 'in', ids)
      .execute()
    for (const r of rows) uuids.set(r.id, r.uuid)
  }
  const rows = changes
    .filter((c) => uuids.has(c.deviceId))
    .map((c) => ({
      deviceUuid: uuids.get(c.deviceId)!,
      hostname: host,
      from: c.from,
      to: c.to,
      reason: c.reason,
      createdAt: now,
    }))
  await insertHealthTransitions(db, rows)
  return rows
}

/** Transitions in order, after sequence number `after`, optionally of one device. */
export async function listHealthTransitions(
  db: ReadDb,
  options: { after?: number; deviceUuid?: string; limit?: number } = {},
): Promise<RecordedHealthTransition[]> {
  let q = db
    .selectFrom('health_transitions')
    .selectAll()
    .where('id', '>', options.after ?? 0)
  if (options.deviceUuid !== undefined) q = q.where('device_uuid', '=', options.deviceUuid)
  const rows = await q
    .orderBy('id')
    .limit(options.limit ?? 1000)
    .execute()
  return rows.map((r) => ({
    id: r.id,
    deviceUuid: r.device_uuid,
    hostname: r.hostname,
    from: r.from_health,
    to: r.to_health,
    reason: r.reason,
    createdAt: r.created_at,
  }))
}
