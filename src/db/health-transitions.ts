/**
 * Recorded health transitions (migration 0008): one row per change of a device's health state,
 * written in the transaction that changes it (report ingestion, the lease sweep), numbered so that
 * a reader can resume after the last row it saw. Each is also an event in the outbox
 * (`accelerator.device.health_changed`, src/db/outbox/events.ts), written alongside.
 */
import type { Kysely } from 'kysely'
import type { ReadDb } from './core/connection.js'
import type { Database } from './core/schema.js'
import { agentEvent, deviceHealthEvent, type NewEvent } from '../domain/events.js'
import { deviceFacts, listDevicesById } from './outbox/device-events.js'
import { insertEvents } from './outbox/events.js'
import { AGENT_BINARY } from './service-rows.js'

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

/** Events that `recordHealthChanges` writes along with the health changes' own (one INSERT). */
export interface HealthChangeEvents {
  /** Written first, in this order (a report's added and removed devices). */
  first?: readonly NewEvent[]
  /** Devices whose change lifts a lease fence: one `accelerator.agent.lease_regained` for the host. */
  leaseRegained?: readonly number[]
}

/**
 * Records changes named by device id (one read of their rows), each with its
 * `accelerator.device.health_changed` event, and `events`; returns what was recorded.
 */
export async function recordHealthChanges(
  db: Kysely<Database>,
  host: string,
  changes: readonly { deviceId: number; from: string; to: string; reason: string | null }[],
  now: string,
  events: HealthChangeEvents = {},
): Promise<HealthTransition[]> {
  const devices = new Map(
    (await listDevicesById(db, [...new Set(changes.map((c) => c.deviceId))])).map((d) => [d.id, d]),
  )
  const recorded = changes.filter((c) => devices.has(c.deviceId))
  const rows = recorded.map((c) => ({
    deviceUuid: devices.get(c.deviceId)!.uuid,
    hostname: host,
    from: c.from,
    to: c.to,
    reason: c.reason,
    createdAt: now,
  }))
  await insertHealthTransitions(db, rows)
  const regained = recorded
    .filter((c) => events.leaseRegained?.includes(c.deviceId))
    .map((c) => devices.get(c.deviceId)!.uuid)
  const agent = { hostname: host, binary: AGENT_BINARY, reason: null, devices: regained }
  await insertEvents(db, [
    ...(events.first ?? []),
    ...(regained.length > 0 ? [agentEvent('lease_regained', agent, now)] : []),
    ...recorded.map((c) => deviceHealthEvent(deviceFacts(devices.get(c.deviceId)!), c.from, now)),
  ])
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
