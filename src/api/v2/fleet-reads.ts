/**
 * The fleet-wide reads of `GET /v2/capacity` and explain. By default (`[api] fleet_cache_ms` 0)
 * each is kept under the database's commit marker (src/db/reads/snapshot-marker.ts, markedCache in
 * src/domain/fleet-snapshot.ts): a request asks the marker, one short query, and reuses the last
 * read only while nothing was committed since it, so an answer is never older than the request
 * (issue 28). Where the dialect has no marker (SQLite, MariaDB) every request reads. With
 * `fleet_cache_ms` > 0 a read is reused for that long whatever changed (an opt-in: answers may be
 * that much older). Either way requests that arrive while a read is under way share it. Keyed by
 * host (one host's read is cheap and kept alike). Leases are still judged per request against the
 * cut-off of that moment; the kept rows are never changed by the routes.
 */
import { listCapacityDeployables } from '../../db/reads/capacity.js'
import { snapshotMarker } from '../../db/reads/snapshot-marker.js'
import type { CapacityDeployable } from '../../domain/capacity.js'
import { listExplainCandidates, type ExplainRow } from '../../db/reads/explain.js'
import { providerUuidsOf } from '../../db/reads/explain-providers.js'
import { markedCache, readThroughCache } from '../../domain/fleet-snapshot.js'
import type { Db } from '../types.js'
import type { CandidateFacts } from './explain-placement.js'

/** Explain's candidates, with what the comparison with Placement reads of each, by uuid. */
export interface ExplainFleet {
  rows: ExplainRow[]
  facts: Map<string, CandidateFacts>
}

export interface FleetReads {
  capacity(hostname: string | undefined): Promise<CapacityDeployable[]>
  explain(hostname: string | undefined): Promise<ExplainFleet>
}

/** `[api] fleet_cache_ms`'s default. */
export const DEFAULT_FLEET_CACHE_MS = 0

async function explainFleet(db: Db, hostname: string | undefined): Promise<ExplainFleet> {
  const [rows, providers] = await Promise.all([
    listExplainCandidates(db, hostname),
    providerUuidsOf(db, hostname),
  ])
  const facts = new Map<string, CandidateFacts>()
  for (const r of rows)
    facts.set(r.deployableUuid, {
      rpUuid: providers.get(r.deployableUuid) ?? null,
      traits: r.attributes.filter((a) => a.key.startsWith('trait')).map((a) => a.value),
      handles: r.handles,
    })
  return { rows, facts }
}

export function createFleetReads(db: Db, ttlMs = DEFAULT_FLEET_CACHE_MS): FleetReads {
  const cache = <V>(load: (host: string | undefined) => Promise<V>) => {
    const byKey = (key: string) => load(key === '' ? undefined : key)
    return ttlMs > 0
      ? readThroughCache({ ttlMs, load: byKey })
      : markedCache({ marker: () => snapshotMarker(db), load: byKey })
  }
  const capacity = cache((host) => listCapacityDeployables(db, host))
  const explain = cache((host) => explainFleet(db, host))
  return {
    capacity: (hostname) => capacity.get(hostname ?? ''),
    explain: (hostname) => explain.get(hostname ?? ''),
  }
}
