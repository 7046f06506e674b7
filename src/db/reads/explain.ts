/**
 * The candidates of a device profile's explain (`POST /v2/device_profiles/{name_or_uuid}/explain`):
 * every deployable of one host, or of the fleet, with what the rules of src/domain/explain.ts read
 * (its device's lifecycle, status and health, removal_pending, its attributes, its attach handles
 * free and in total, and the host agent's last beat). Two queries whatever the count, never one
 * per candidate, sent together (on a pool they run side by side): the deployables with their
 * handles counted (a grouped subquery), and the attributes. Across the fleet the attributes and
 * the handles are read from their tables alone: the joins to deployables and devices only serve
 * the host filter. Each query is compiled once (src/db/core/precompiled.ts). Read-only. Capacity reads
 * its own, leaner, columns (src/db/reads/capacity.ts) and counts handles with handleCounts.
 */
import { sql } from 'kysely'
import type { ReadDb } from '../core/connection.js'
import type { ExplainCandidate } from '../../domain/explain.js'
import { precompile } from '../core/precompiled.js'
import { AGENT_BINARY } from './service-reads.js'

/** A handle is in use when flagged, or named by an accelerator request (v2 and v1 alike). */
const busy = sql<number>`case when h.in_use = 1 or q.id is not null then 1 else 0 end`
/** Of those, one out of service for its clean (flagged in use, named by no request). */
const cleaning = sql<number>`case when h.clean_state is not null and q.id is null then 1 else 0 end`

export interface ExplainRow extends ExplainCandidate {
  deployableUuid: string
  deviceUuid: string
  /** The device's type (GPU, FPGA, …). */
  deviceType: string
  /** `cleaning`: released, in use until cleaned (docs/cleaning.md); counted out of `free`. */
  handles: { total: number; free: number; cleaning: number }
}

const handlesQuery = (db: ReadDb) =>
  db
    .selectFrom('attach_handles as h')
    .leftJoin('accelerator_requests as q', 'q.attach_handle_id', 'h.id')
    .select([
      'h.deployable_id',
      sql<string | number>`count(*)`.as('total'),
      sql<string | number | null>`sum(${busy})`.as('used'),
      sql<string | number | null>`sum(${cleaning})`.as('cleaning'),
    ])
    .groupBy('h.deployable_id')

/**
 * The attach handles of every deployable (only those on `hostname` when given), counted in
 * total and in use, one row per deployable that has any: a table to left-join on its
 * `deployable_id`.
 */
export const handleCounts = (db: ReadDb, hostname?: string) =>
  (hostname === undefined
    ? handlesQuery(db)
    : handlesQuery(db)
        .innerJoin('deployables as hp', 'hp.id', 'h.deployable_id')
        .innerJoin('devices as hd', 'hd.id', 'hp.device_id')
        .where('hd.hostname', '=', hostname)
  ).as('c')

const deployablesQuery = (db: ReadDb, hostname?: string) =>
  db
    .selectFrom('deployables as p')
    .innerJoin('devices as d', 'd.id', 'p.device_id')
    .leftJoin('services as s', (j) =>
      j.onRef('s.host', '=', 'd.hostname').on('s.binary', '=', AGENT_BINARY),
    )
    .leftJoin(handleCounts(db, hostname), (j) => j.onRef('c.deployable_id', '=', 'p.id'))
    .select([
      'p.id',
      'p.uuid',
      'p.name',
      'p.removal_pending',
      'd.uuid as device_uuid',
      'd.type',
      'd.hostname',
      'd.lifecycle',
      'd.lifecycle_reason',
      'd.status',
      'd.health',
      'd.health_reason',
      's.last_seen as agent_last_seen',
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

const fleetAttributes = precompile((db: ReadDb) =>
  db.selectFrom('attributes as a').select(['a.deployable_id', 'a.key', 'a.value']).orderBy('a.id'),
)
const hostAttributes = precompile((db: ReadDb, hostname: string) =>
  db
    .selectFrom('attributes as a')
    .innerJoin('deployables as p', 'p.id', 'a.deployable_id')
    .innerJoin('devices as d', 'd.id', 'p.device_id')
    .select(['a.deployable_id', 'a.key', 'a.value'])
    .where('d.hostname', '=', hostname)
    .orderBy('a.id'),
)

/** Every deployable on `hostname` (all hosts when undefined), in host then id order. */
export async function listExplainCandidates(
  db: ReadDb,
  hostname: string | undefined,
): Promise<ExplainRow[]> {
  const all = hostname === undefined
  const [deployables, attributes] = await Promise.all([
    all ? fleetDeployables(db) : hostDeployables(db, hostname),
    all ? fleetAttributes(db) : hostAttributes(db, hostname),
  ])
  if (deployables.length === 0) return []

  const attrsOf = new Map<number, { key: string; value: string }[]>()
  for (const a of attributes) {
    const list = attrsOf.get(a.deployable_id)
    if (list === undefined) attrsOf.set(a.deployable_id, [{ key: a.key, value: a.value }])
    else list.push({ key: a.key, value: a.value })
  }
  return deployables.map((r): ExplainRow => {
    const total = Number(r.total ?? 0)
    return {
      deployableUuid: r.uuid,
      deviceUuid: r.device_uuid,
      deviceType: r.type,
      name: r.name,
      hostname: r.hostname,
      attributes: attrsOf.get(r.id) ?? [],
      lifecycle: r.lifecycle,
      lifecycleReason: r.lifecycle_reason,
      status: r.status,
      health: r.health,
      healthReason: r.health_reason,
      removalPending: Number(r.removal_pending) === 1,
      agentLastSeen: r.agent_last_seen,
      handles: {
        total,
        free: total - Number(r.used ?? 0),
        cleaning: Number(r.cleaning ?? 0),
      },
    }
  })
}
