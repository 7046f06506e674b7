/**
 * The Placement provider of every deployable that explain judges (issue 17): deployable uuid →
 * `rp_uuid` (null until the conductor has one), on one host or over the fleet, in one query.
 * Read-only; explain's comparison with Placement (src/api/v2/explain-placement.ts) reads it.
 */
import type { ReadDb } from '../core/connection.js'

/** Deployable uuid → its provider uuid, for `hostname`'s deployables (all when undefined). */
export async function providerUuidsOf(
  db: ReadDb,
  hostname: string | undefined,
): Promise<Map<string, string | null>> {
  let q = db
    .selectFrom('deployables as p')
    .innerJoin('devices as d', 'd.id', 'p.device_id')
    .select(['p.uuid', 'p.rp_uuid'])
  if (hostname !== undefined) q = q.where('d.hostname', '=', hostname)
  const rows = await q.execute()
  return new Map(rows.map((r) => [r.uuid, r.rp_uuid]))
}
