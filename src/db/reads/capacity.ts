/**
 * What capacity (`GET /v2/capacity`, src/domain/capacity.ts) reads: every deployable with its
 * device's state, its host agent's last beat, its `rc` attribute and its attach handles counted in
 * total and in use (explain's handleCounts, src/db/reads/explain.ts), then the values of the `trait*`
 * attributes: two queries whatever the fleet's size, never one per row, sent together, with only
 * the columns capacity uses. Each query is compiled once (src/db/core/precompiled.ts). Read-only.
 */
import { sql } from 'kysely'
import type { ReadDb } from '../core/connection.js'
import type { CapacityDeployable } from '../../domain/capacity.js'
import { handleCounts } from './explain.js'
import { precompile } from '../core/precompiled.js'
import { AGENT_BINARY } from './service-reads.js'

/**
 * The deployables with their `rc` attribute and handle counts. `rc` is matched exactly: `=` alone
 * would also take `rc ` on MariaDB (trailing spaces are not compared), LIKE alone `RC` on SQLite.
 */
const deployablesQuery = (db: ReadDb, hostname?: string) =>
  db
    .selectFrom('deployables as p')
    .innerJoin('devices as d', 'd.id', 'p.device_id')
    .leftJoin('services as s', (j) =>
      j.onRef('s.host', '=', 'd.hostname').on('s.binary', '=', AGENT_BINARY),
    )
    .leftJoin('attributes as r', (j) =>
      j.onRef('r.deployable_id', '=', 'p.id').on('r.key', '=', 'rc').on('r.key', 'like', 'rc'),
    )
    .leftJoin(handleCounts(db, hostname), (j) => j.onRef('c.deployable_id', '=', 'p.id'))
    .select([
      'p.id',
      'p.removal_pending',
      'd.type',
      'd.hostname',
      'd.lifecycle',
      'd.status',
      'd.health',
      's.last_seen as agent_last_seen',
      'r.value as rc',
      'c.total',
      'c.used',
      'c.cleaning',
    ])
    .orderBy('d.hostname')
    .orderBy('p.id')

const fleetDeployables = precompile((db: ReadDb) => deployablesQuery(db))
const hostDeployables = precompile((db: ReadDb, hostname: string) =>
  deployablesQuery(db, hostname).where('d.hostname', '=', hostname),
)

/** The values of `trait*` attributes: substr(…) = is exact on every dialect, unlike LIKE. */
const traitsQuery = (db: ReadDb) =>
  db
    .selectFrom('attributes as a')
    .select(['a.deployable_id', 'a.value'])
    .where(sql`substr(a.key, 1, 5)`, '=', 'trait')

const fleetTraits = precompile((db: ReadDb) => traitsQuery(db))
const hostTraits = precompile((db: ReadDb, hostname: string) =>
  traitsQuery(db)
    .innerJoin('deployables as p', 'p.id', 'a.deployable_id')
    .innerJoin('devices as d', 'd.id', 'p.device_id')
    .where('d.hostname', '=', hostname),
)

/** Every deployable on `hostname` (all hosts when undefined), in host then id order. */
export async function listCapacityDeployables(
  db: ReadDb,
  hostname?: string,
): Promise<CapacityDeployable[]> {
  const all = hostname === undefined
  const [deployables, traits] = await Promise.all([
    all ? fleetDeployables(db) : hostDeployables(db, hostname),
    all ? fleetTraits(db) : hostTraits(db, hostname),
  ])
  if (deployables.length === 0) return []

  const byId = new Map<number, CapacityDeployable>()
  const out = deployables.map((r): CapacityDeployable => {
    const total = Number(r.total ?? 0)
    const d: CapacityDeployable = {
      hostname: r.hostname,
      deviceType: r.type,
      resourceClass: r.rc,
      traits: [],
      lifecycle: r.lifecycle,
      status: r.status,
      health: r.health,
      removalPending: Number(r.removal_pending) === 1,
      agentLastSeen: r.agent_last_seen,
      handles: total,
      used: Number(r.used ?? 0) - Number(r.cleaning ?? 0),
      cleaning: Number(r.cleaning ?? 0),
    }
    byId.set(r.id, d)
    return d
  })
  for (const t of traits) byId.get(t.deployable_id)?.traits.push(t.value)
  // Sorted, without duplicates (sorting first puts the duplicates side by side).
  for (const d of out) {
    if (d.traits.length < 2) continue
    d.traits.sort()
    d.traits = d.traits.filter((t, i, ts) => i === 0 || t !== ts[i - 1])
  }
  return out
}
