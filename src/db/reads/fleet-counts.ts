/**
 * The fleet as the conductor's gauges count it (docs/metrics.md): a few grouped counts, each one
 * indexed or a scan of a small table, read at most every `[metrics] fleet_refresh_seconds`.
 */
import { setImmediate as nextTurn } from 'node:timers/promises'
import { sql } from 'kysely'
import type { ReadDb } from '../core/connection.js'
import { AGENT_BINARY } from './service-reads.js'

export interface FleetCounts {
  devices: {
    type: string
    host: string
    lifecycle: string
    status: string
    health: string
    n: number
  }[]
  deployables: { host: string; removalPending: boolean; n: number }[]
  /** `state`: `in_use` (flagged or held by a request), `cleaning` (released, not yet cleaned) or `free`. */
  handles: { host: string; state: 'in_use' | 'cleaning' | 'free'; n: number }[]
  arqs: { state: string; n: number }[]
  /** Agents whose last beat is at or after `cutoff` (up), and before it (down). */
  agents: { up: number; down: number }
}

const n = sql<number>`count(*)`

/** One read of every fleet count; `cutoff` is the lease cut-off (agents beating before it are down). */
export async function getFleetCounts(db: ReadDb, cutoff: string): Promise<FleetCounts> {
  const devices = await db
    .selectFrom('devices')
    .select(['type', 'hostname', 'lifecycle', 'status', 'health', n.as('n')])
    .groupBy(['type', 'hostname', 'lifecycle', 'status', 'health'])
    .execute()
  // A yield between the counts: on SQLite each is synchronous, and together they would hold the
  // event loop for the sum of them.
  await nextTurn()
  const deployables = await db
    .selectFrom('deployables as p')
    .innerJoin('devices as d', 'd.id', 'p.device_id')
    .select(['d.hostname', 'p.removal_pending', n.as('n')])
    .groupBy(['d.hostname', 'p.removal_pending'])
    .execute()
  await nextTurn()
  // A handle is in use when named by a request (v2 and v1 alike) or flagged, unless it is flagged
  // only for its clean (docs/cleaning.md).
  const state = sql<string>`case when a.id is not null then 'in_use'
    when h.clean_state is not null then 'cleaning' when h.in_use = 1 then 'in_use' else 'free' end`
  const handles = await db
    .selectFrom('attach_handles as h')
    .innerJoin('deployables as p', 'p.id', 'h.deployable_id')
    .innerJoin('devices as d', 'd.id', 'p.device_id')
    .leftJoin('accelerator_requests as a', 'a.attach_handle_id', 'h.id')
    .select(['d.hostname', state.as('state'), n.as('n')])
    .groupBy(['d.hostname', state])
    .execute()
  await nextTurn()
  const arqs = await db
    .selectFrom('accelerator_requests')
    .select(['state', n.as('n')])
    .groupBy('state')
    .execute()
  await nextTurn()
  const agents = await db
    .selectFrom('services')
    .select([
      sql<number>`sum(case when last_seen >= ${cutoff} then 1 else 0 end)`.as('up'),
      n.as('total'),
    ])
    .where('binary', '=', AGENT_BINARY)
    .executeTakeFirstOrThrow()
  const up = Number(agents.up ?? 0)
  return {
    devices: devices.map((r) => ({
      type: r.type,
      host: r.hostname,
      lifecycle: r.lifecycle,
      status: r.status,
      health: r.health,
      n: Number(r.n),
    })),
    deployables: deployables.map((r) => ({
      host: r.hostname,
      removalPending: Number(r.removal_pending) === 1,
      n: Number(r.n),
    })),
    handles: handles.map((r) => ({
      host: r.hostname,
      state: r.state as 'in_use' | 'cleaning' | 'free',
      n: Number(r.n),
    })),
    arqs: arqs.map((r) => ({ state: r.state, n: Number(r.n) })),
    agents: { up, down: Number(agents.total) - up },
  }
}
