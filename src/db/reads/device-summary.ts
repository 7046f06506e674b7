/**
 * The devices of the fleet counted, for `GET /v2/devices/summary` (2.10) and the dashboard's Fleet
 * page: three grouped reads whatever the fleet's size (counts by type, lifecycle, status and
 * health; per host; the unhealthy devices, the newest change first, up to a cap), so a page of 1,000
 * hosts × 8 devices reads a few kilobytes instead of every device.
 */
import { setImmediate as nextTurn } from 'node:timers/promises'
import { sql } from 'kysely'
import type { ReadDb } from '../core/connection.js'

/** A device whose health is not `ok`, with why and since when. */
export interface UnhealthyDevice {
  uuid: string
  hostname: string
  type: string
  health: string
  healthReason: string | null
  healthUpdatedAt: string | null
  /** Since when it has this health: when health last changed, else when the row was created. */
  healthSince: string
}

export interface DeviceSummary {
  total: number
  /** How many devices have each value, by column. */
  byType: Record<string, number>
  byLifecycle: Record<string, number>
  byStatus: Record<string, number>
  byHealth: Record<string, number>
  /** Every host with devices, by name: how many, and how many are not `ok`. */
  hosts: { hostname: string; devices: number; unhealthy: number }[]
  /** The devices whose health is not `ok`: how many in all, and the first `limit` of them. */
  unhealthy: { total: number; devices: UnhealthyDevice[] }
}

/** How many unhealthy devices a summary lists when the caller names no limit. */
export const DEFAULT_UNHEALTHY_LIMIT = 100

const n = sql<number | string>`count(*)`

function add(counts: Record<string, number>, key: string, by: number): void {
  counts[key] = (counts[key] ?? 0) + by
}

/** One summary of every device; `unhealthyLimit` caps the listed unhealthy devices. */
export async function getDeviceSummary(
  db: ReadDb,
  unhealthyLimit = DEFAULT_UNHEALTHY_LIMIT,
): Promise<DeviceSummary> {
  const groups = await db
    .selectFrom('devices')
    .select(['type', 'lifecycle', 'status', 'health', n.as('n')])
    .groupBy(['type', 'lifecycle', 'status', 'health'])
    .execute()
  // A yield between the reads: on SQLite each is synchronous (as in fleet-counts.ts).
  await nextTurn()
  const notOk = sql<number | string>`sum(case when health <> 'ok' then 1 else 0 end)`
  const hosts = await db
    .selectFrom('devices')
    .select(['hostname', n.as('n'), notOk.as('unhealthy')])
    .groupBy('hostname')
    .orderBy('hostname')
    .execute()
  await nextTurn()
  // A device that arrived unhealthy has had its health since its row was created (no change yet).
  const since = sql<string>`coalesce(health_updated_at, created_at)`
  const unhealthy = await db
    .selectFrom('devices')
    .select(['uuid', 'hostname', 'type', 'health', 'health_reason', 'health_updated_at'])
    .select(since.as('health_since'))
    .where('health', '<>', 'ok')
    .orderBy(since, 'desc')
    .orderBy('hostname')
    .orderBy('uuid')
    .limit(unhealthyLimit)
    .execute()

  const summary: DeviceSummary = {
    total: 0,
    byType: {},
    byLifecycle: {},
    byStatus: {},
    byHealth: {},
    hosts: hosts.map((h) => ({
      hostname: h.hostname,
      devices: Number(h.n),
      unhealthy: Number(h.unhealthy ?? 0),
    })),
    unhealthy: {
      total: 0,
      devices: unhealthy.map((d) => ({
        uuid: d.uuid,
        hostname: d.hostname,
        type: d.type,
        health: d.health,
        healthReason: d.health_reason,
        healthUpdatedAt: d.health_updated_at,
        healthSince: d.health_since,
      })),
    },
  }
  for (const g of groups) {
    const count = Number(g.n)
    summary.total += count
    add(summary.byType, g.type, count)
    add(summary.byLifecycle, g.lifecycle, count)
    add(summary.byStatus, g.status, count)
    add(summary.byHealth, g.health, count)
    if (g.health !== 'ok') summary.unhealthy.total += count
  }
  return summary
}
