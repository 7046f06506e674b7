/**
 * What capacity (`GET /v2/capacity`, src/domain/capacity.ts) reads: every deployable with its
 * device's state and its host agent's last beat, its `rc` and `trait*` attributes, and its attach
 * handles counted in total and in use, through explain's reader (src/db/explain.ts: three grouped
 * queries whatever the fleet's size, never one per row). Read-only.
 */
import type { ReadDb } from './connection.js'
import type { CapacityDeployable } from '../domain/capacity.js'
import { listExplainCandidates } from './explain.js'

/** Every deployable on `hostname` (all hosts when undefined), in host then id order. */
export async function listCapacityDeployables(
  db: ReadDb,
  hostname?: string,
): Promise<CapacityDeployable[]> {
  return (await listExplainCandidates(db, hostname)).map((r) => {
    let resourceClass: string | null = null
    const traits = new Set<string>()
    for (const a of r.attributes) {
      if (a.key === 'rc') resourceClass = a.value
      else if (a.key.startsWith('trait')) traits.add(a.value)
    }
    return {
      hostname: r.hostname,
      deviceType: r.deviceType,
      resourceClass,
      traits: [...traits].sort(),
      lifecycle: r.lifecycle,
      status: r.status,
      health: r.health,
      removalPending: r.removalPending,
      agentLastSeen: r.agentLastSeen,
      handles: r.handles.total,
      used: r.handles.total - r.handles.free,
    }
  })
}
