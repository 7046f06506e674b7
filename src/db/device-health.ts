/**
 * The one writer of a device's health row (docs/health.md): applies what a decision of
 * src/domain/health/ (or a report's, src/domain/health/report.ts) decided, in the caller's
 * transaction. A change sets `health`, `health_reason` and `health_updated_at` (a change of state
 * also puts `healthy_reports` back to 0), records the transition with its event
 * (health-transitions.ts), and forgets the host's report hash when the change asks for a full report.
 */
import type { Kysely } from 'kysely'
import type { Database, DeviceRow } from './core/schema.js'
import type { DeviceHealthChange, DeviceHealthState } from '../domain/health/change.js'
import type { HostLeaseFence } from '../domain/health/lease.js'
import type { HealthSet } from '../domain/health/report.js'
import { agentEvent, deviceHealthEvent, type NewEvent } from '../domain/events.js'
import { deviceFacts } from './outbox/device-events.js'
import { insertEvents } from './outbox/events.js'
import {
  insertHealthTransitions,
  recordHealthChanges,
  type HealthTransition,
} from './health-transitions.js'
import { AGENT_BINARY, deleteReportHashes } from './service-rows.js'

/** What a decision reads of a device row. */
export const healthStateOf = (
  row: Pick<DeviceRow, 'id' | 'health' | 'health_reason'>,
): DeviceHealthState => ({
  deviceId: row.id,
  health: row.health,
  healthReason: row.health_reason,
})

/** The health row of device `id`, or undefined when it is gone. */
export async function getDeviceHealth(
  db: Kysely<Database>,
  id: number,
): Promise<DeviceHealthState | undefined> {
  const row = await db
    .selectFrom('devices')
    .select(['id', 'health', 'health_reason'])
    .where('id', '=', id)
    .executeTakeFirst()
  return row && healthStateOf(row)
}

/** The columns of a report's health set (folded into the inventory's own UPDATE of the device). */
export function reportHealthColumns(set: HealthSet, now: string) {
  return {
    health: set.health,
    lifecycle_reason: set.lifecycleReason,
    health_reason: set.healthReason,
    health_updated_at: set.health === undefined ? undefined : now,
    healthy_reports: set.healthyReports,
  }
}

/** Applies one device's decided change on host `host`: the row, its transition, the report hash. */
export async function applyHealthChange(
  db: Kysely<Database>,
  host: string,
  change: DeviceHealthChange,
  now: string,
): Promise<void> {
  const set =
    change.health === undefined
      ? { health_reason: change.reason, health_updated_at: now }
      : {
          health: change.health,
          health_reason: change.reason,
          health_updated_at: now,
          healthy_reports: 0,
        }
  await db.updateTable('devices').set(set).where('id', '=', change.deviceId).execute()
  if (change.transition !== undefined)
    await recordHealthChanges(db, host, [{ deviceId: change.deviceId, ...change.transition }], now)
  if (change.forceReport) await deleteReportHashes(db, [host])
}

/**
 * Applies lease fences (src/domain/health/lease.ts) of hosts whose agents' leases ran out before
 * `cutoff`: per host one UPDATE that re-checks the lease in the same statement (a heartbeat that
 * landed meanwhile wins: nothing is written for that host), then the report hashes of the hosts
 * fenced, their transitions and the events (`accelerator.agent.lease_lost` per host, then
 * `accelerator.device.health_changed` per device). `rows`: the devices as loaded, by id. Returns
 * the transitions recorded.
 */
export async function applyLeaseFences(
  db: Kysely<Database>,
  fences: readonly HostLeaseFence[],
  rows: ReadonlyMap<number, DeviceRow>,
  options: { cutoff: string; now: string },
): Promise<HealthTransition[]> {
  const { cutoff, now } = options
  const transitions: HealthTransition[] = []
  const events: NewEvent[] = []
  const forced: string[] = []
  for (const { host, reason, changes } of fences) {
    const res = await db
      .updateTable('devices')
      .set({
        health: 'unknown',
        health_reason: reason,
        health_updated_at: now,
        healthy_reports: 0,
        updated_at: now,
      })
      .where(
        'id',
        'in',
        changes.map((c) => c.deviceId),
      )
      .where(({ exists, selectFrom }) =>
        exists(
          selectFrom('services')
            .select('services.id')
            .where('services.host', '=', host)
            .where('services.binary', '=', AGENT_BINARY)
            .where('services.last_seen', '<', cutoff),
        ),
      )
      .executeTakeFirst()
    if (Number(res.numUpdatedRows) === 0) continue // the agent beat meanwhile
    const devices = changes.map((c) => rows.get(c.deviceId)!)
    const lost = {
      hostname: host,
      binary: AGENT_BINARY,
      reason,
      devices: devices.map((d) => d.uuid),
    }
    events.push(agentEvent('lease_lost', lost, now))
    for (const [i, c] of changes.entries()) {
      const d = devices[i]!
      const t = c.transition!
      transitions.push({
        deviceUuid: d.uuid,
        hostname: host,
        from: t.from,
        to: t.to,
        reason: t.reason,
        createdAt: now,
      })
      const fenced = { ...deviceFacts(d), health: t.to, healthReason: t.reason }
      events.push(deviceHealthEvent(fenced, t.from, now))
    }
    if (changes.some((c) => c.forceReport)) forced.push(host)
  }
  if (forced.length > 0) await deleteReportHashes(db, forced)
  await insertHealthTransitions(db, transitions)
  await insertEvents(db, events)
  return transitions
}
