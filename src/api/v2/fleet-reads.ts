/**
 * The fleet-wide reads of `GET /v2/capacity` and explain, each behind a read-through cache of
 * `[api] fleet_cache_ms` (src/domain/fleet-snapshot.ts): requests within that time, and requests
 * that arrive while a read is under way, share one read. Keyed by host (one host's read is cheap
 * and cached alike). Leases are still judged per request against the cut-off of that moment; the
 * cached rows are never changed by the routes. 0 reads the database on every request.
 */
import { listCapacityDeployables } from '../../db/capacity.js'
import type { CapacityDeployable } from '../../domain/capacity.js'
import { listExplainCandidates, type ExplainRow } from '../../db/explain.js'
import { readThroughCache } from '../../domain/fleet-snapshot.js'
import type { Db } from '../types.js'

export interface FleetReads {
  capacity(hostname: string | undefined): Promise<CapacityDeployable[]>
  explain(hostname: string | undefined): Promise<ExplainRow[]>
}

/** `[api] fleet_cache_ms`'s default. */
export const DEFAULT_FLEET_CACHE_MS = 0

export function createFleetReads(db: Db, ttlMs = DEFAULT_FLEET_CACHE_MS): FleetReads {
  const capacity = readThroughCache({
    ttlMs,
    load: (host: string) => listCapacityDeployables(db, host === '' ? undefined : host),
  })
  const explain = readThroughCache({
    ttlMs,
    load: (host: string) => listExplainCandidates(db, host === '' ? undefined : host),
  })
  return {
    capacity: (hostname) => capacity.get(hostname ?? ''),
    explain: (hostname) => explain.get(hostname ?? ''),
  }
}
