/**
 * The candidates of a device profile's explain (`POST /v2/device_profiles/{name_or_uuid}/explain`):
 * every deployable of one host, or of the fleet, with what the rules of src/domain/explain.ts read
 * (its device's lifecycle, status and health, removal_pending, its attributes, its attach handles
 * free and in total, and the host agent's last beat). Three grouped queries whatever the count,
 * never one per candidate. Read-only. Capacity (src/db/capacity.ts) reads the fleet through it too.
 */
import { sql } from 'kysely'
import type { ReadDb } from './connection.js'
import type { ExplainCandidate } from '../domain/explain.js'
import { AGENT_BINARY } from './services.js'

/** A handle is in use when flagged, or named by an accelerator request (v2 and v1 alike). */
const busy = sql<number>`case when h.in_use = 1 or q.id is not null then 1 else 0 end`

export interface ExplainRow extends ExplainCandidate {
  deployableUuid: string
  deviceUuid: string
  /** The device's type (GPU, FPGA, …). */
  deviceType: string
  handles: { total: number; free: number }
}

/** Every deployable on `hostname` (all hosts when undefined), in host then id order. */
export async function listExplainCandidates(
  db: ReadDb,
  hostname: string | undefined,
): Promise<ExplainRow[]> {
  const all = hostname === undefined
  const deployables = await db
    .selectFrom('deployables as p')
    .innerJoin('devices as d', 'd.id', 'p.device_id')
    .leftJoin('services as s', (j) =>
      j.onRef('s.host', '=', 'd.hostname').on('s.binary', '=', AGENT_BINARY),
    )
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
    ])
    .orderBy('d.hostname')
    .orderBy('p.id')
    .$if(!all, (q) => q.where('d.hostname', '=', hostname!))
    .execute()
  if (deployables.length === 0) return []
  const attributes = await db
    .selectFrom('attributes as a')
    .innerJoin('deployables as p', 'p.id', 'a.deployable_id')
    .innerJoin('devices as d', 'd.id', 'p.device_id')
    .select(['a.deployable_id', 'a.key', 'a.value'])
    .orderBy('a.id')
    .$if(!all, (q) => q.where('d.hostname', '=', hostname!))
    .execute()
  const handles = await db
    .selectFrom('attach_handles as h')
    .innerJoin('deployables as p', 'p.id', 'h.deployable_id')
    .innerJoin('devices as d', 'd.id', 'p.device_id')
    .leftJoin('accelerator_requests as q', 'q.attach_handle_id', 'h.id')
    .select([
      'h.deployable_id',
      sql<string | number>`count(*)`.as('total'),
      sql<string | number | null>`sum(${busy})`.as('used'),
    ])
    .groupBy('h.deployable_id')
    .$if(!all, (q) => q.where('d.hostname', '=', hostname!))
    .execute()

  const attrsOf = new Map<number, { key: string; value: string }[]>()
  for (const a of attributes) {
    const list = attrsOf.get(a.deployable_id) ?? []
    list.push({ key: a.key, value: a.value })
    attrsOf.set(a.deployable_id, list)
  }
  const handlesOf = new Map(
    handles.map((h) => [h.deployable_id, { total: Number(h.total), used: Number(h.used ?? 0) }]),
  )
  return deployables.map((r) => {
    const h = handlesOf.get(r.id) ?? { total: 0, used: 0 }
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
      handles: { total: h.total, free: h.total - h.used },
    }
  })
}
