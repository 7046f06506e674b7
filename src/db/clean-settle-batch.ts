/**
 * Settles many clean outcomes in one transaction with few statements (issue 28; docs/cleaning.md):
 * each unit's guarded UPDATE (`closeClean`: only the release it was read for), then one read of
 * their devices, one INSERT of their custody records and one of their events. A unit whose settle
 * changes its device's health (a failed clean fences the device; a success may lift a failed
 * clean's fence), and every other unit of that device in the batch, goes through `settleClean`'s
 * own path instead, in order, so that the health transitions and the events' device facts are
 * exactly those of settling one unit after the other.
 */
import type { Kysely } from 'kysely'
import { cleanMayChangeHealth } from '../domain/health/clean.js'
import { healthStateOf } from './device-health.js'
import { appendFollowUpRecords } from './custody.js'
import { insertEvents } from './outbox/events.js'
import {
  cleanEvent,
  cleanHealthOutcome,
  closeClean,
  custodyRecord,
  settleClean,
  type CleanSettlement,
  type CleaningUnit,
} from './cleaning.js'
import type { Database } from './core/schema.js'

export interface CleanSettleEntry {
  unit: CleaningUnit
  outcome: CleanSettlement
  /** The uuid of its custody record. */
  recordUuid: string
}

/**
 * Settles `entries` in order; per entry, its record's uuid, or undefined when its unit was no
 * longer cleaning for that release (nothing written for it).
 */
export async function settleCleans(
  db: Kysely<Database>,
  entries: readonly CleanSettleEntry[],
  now: string,
): Promise<(string | undefined)[]> {
  const devices =
    entries.length === 0
      ? []
      : await db
          .selectFrom('devices')
          .selectAll()
          .where('id', 'in', [...new Set(entries.map((e) => e.unit.deviceId))])
          .execute()
  const byId = new Map(devices.map((d) => [d.id, d]))
  // Devices whose health a settle of this batch may change: their units settle one by one.
  const oneByOne = new Set(
    entries
      .filter((e) => {
        const device = byId.get(e.unit.deviceId)
        const health = cleanHealthOutcome(e.outcome)
        return (
          health.failed ||
          (device !== undefined && cleanMayChangeHealth(healthStateOf(device), health))
        )
      })
      .map((e) => e.unit.deviceId),
  )
  const out: (string | undefined)[] = []
  const done: CleanSettleEntry[] = []
  for (const e of entries) {
    const options = { now, recordUuid: e.recordUuid }
    if (oneByOne.has(e.unit.deviceId) || !byId.has(e.unit.deviceId)) {
      out.push(await settleClean(db, e.unit, e.outcome, options))
    } else if (await closeClean(db, e.unit, e.outcome, now)) {
      done.push(e)
      out.push(e.recordUuid)
    } else out.push(undefined)
  }
  const options = (e: CleanSettleEntry) => ({ now, recordUuid: e.recordUuid })
  await appendFollowUpRecords(
    db,
    done.map((e) => custodyRecord(e.unit, e.outcome, options(e))),
  )
  await insertEvents(
    db,
    done.map((e) => cleanEvent(e.unit, e.outcome, byId.get(e.unit.deviceId)!, options(e))),
  )
  return out
}
