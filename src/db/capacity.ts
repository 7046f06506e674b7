/**
 * What capacity (`GET /v2/capacity`, src/domain/capacity.ts) reads: every deployable with its
 * device's state and its host agent's last beat, its `rc` and `trait*` attributes, and its attach
 * handles counted in total and in use. Three queries whatever the fleet's size (handles are
 * counted by the database, grouped per deployable), never one per row. Read-only.
 */
import { sql } from 'kysely'
import type { ReadDb } from './connection.js'
import type { CapacityDeployable } from '../domain/capacity.js'
import { AGENT_BINARY } from './services.js'

/** A handle is in use when flagged, or named by an accelerator request (v2 and v1 alike). */
const busy = sql<number>`case when h.in_use = 1 or a.id is not null then 1 else 0 end`

/** Every deployable on `hostname` (all hosts when undefined), in host then id order. */
export async function listCapacityDeployables(
  db: ReadDb,
  hostname?: string,
): Promise<CapacityDeployable[]> {
  const one = hostname !== undefined
  const deployables = await db
    .selectFrom('deployables as p')
    .innerJoin('devices as d', 'd.id', 'p.device_id')
    .leftJoin('services as s', (j) =>
      j.onRef('s.host', '=', 'd.hostname').on('s.binary', '=', AGENT_BINARY),
    )
    .select([
      'p.id',
      'p.removal_pending',
      'd.hostname',
      'd.type',
      'd.lifecycle',
      'd.status',
      'd.health',
      's.last_seen as agent_last_seen',
    ])
    .$if(one, (q) => q.where('d.hostname', '=', hostname!))
    .orderBy('d.hostname')
    .orderBy('p.id')
    .execute()
  if (deployables.length === 0) return []
  const attributes = await db
    .selectFrom('attributes as t')
    .innerJoin('deployables as p', 'p.id', 't.deployable_id')
    .innerJoin('devices as d', 'd.id', 'p.device_id')
    .select(['t.deployable_id', 't.key', 't.value'])
    .where((eb) => eb.or([eb('t.key', '=', 'rc'), eb('t.key', 'like', 'trait%')]))
    .$if(one, (q) => q.where('d.hostname', '=', hostname!))
    .execute()
  const handles = await db
    .selectFrom('attach_handles as h')
    .innerJoin('deployables as p', 'p.id', 'h.deployable_id')
    .innerJoin('devices as d', 'd.id', 'p.device_id')
    .leftJoin('accelerator_requests as a', 'a.attach_handle_id', 'h.id')
    .select([
      'h.deployable_id',
      sql<string | number>`count(*)`.as('total'),
      sql<string | number | null>`sum(${busy})`.as('used'),
    ])
    .$if(one, (q) => q.where('d.hostname', '=', hostname!))
    .groupBy('h.deployable_id')
    .execute()

  const rcOf = new Map<number, string>()
  const traitsOf = new Map<number, Set<string>>()
  for (const a of attributes) {
    if (a.key === 'rc') rcOf.set(a.deployable_id, a.value)
    // LIKE ignores case on SQLite and MariaDB; a trait key is `trait…` exactly.
    else if (a.key.startsWith('trait'))
      traitsOf.set(a.deployable_id, (traitsOf.get(a.deployable_id) ?? new Set()).add(a.value))
  }
  const handlesOf = new Map(
    handles.map((h) => [h.deployable_id, { total: Number(h.total), used: Number(h.used ?? 0) }]),
  )
  return deployables.map((r) => {
    const h = handlesOf.get(r.id) ?? { total: 0, used: 0 }
    return {
      hostname: r.hostname,
      deviceType: r.type,
      resourceClass: rcOf.get(r.id) ?? null,
      traits: [...(traitsOf.get(r.id) ?? [])].sort(),
      lifecycle: r.lifecycle,
      status: r.status,
      health: r.health,
      removalPending: Number(r.removal_pending) === 1,
      agentLastSeen: r.agent_last_seen,
      handles: h.total,
      used: h.used,
    }
  })
}
