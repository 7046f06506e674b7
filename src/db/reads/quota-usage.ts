/**
 * What quota counts (docs/quota.md): the units a project holds through binds Cyborg placed itself,
 * by resource class, as the API reads them. The per-project lock that makes counting and claiming
 * one step, and the count a claim takes under it, are src/db/quota-lock.ts.
 *
 * Held: a request in BindStarted, Bound or UnbindFailed that has a deployable, placed by Cyborg: a
 * v1 attachment (no device profile) or a standalone v2 bind (no provider chosen by Nova). A Nova
 * bind names its provider (`device_rp_uuid`), and Nova's own unified limits count it through
 * Placement. Each request holds one unit of its deployable's resource class (`rc` attribute).
 */
import type { ReadDb } from '../core/connection.js'

const HOLDING = ['BindStarted', 'Bound', 'UnbindFailed']

/**
 * The units `projectId` holds, counted by resource class in SQL (the claim's count in
 * src/db/quota-lock.ts narrows it to one class).
 */
export const quotaHoldings = (db: ReadDb, projectId: string) =>
  db
    .selectFrom('accelerator_requests as a')
    .innerJoin('attributes as rc', (j) =>
      j.onRef('rc.deployable_id', '=', 'a.deployable_id').on('rc.key', '=', 'rc'),
    )
    .select((eb) => ['rc.value as rc', eb.fn.countAll<number | string>().as('n')])
    .where('a.project_id', '=', projectId)
    .where('a.state', 'in', HOLDING)
    .where((eb) =>
      eb.or([eb('a.device_profile_id', 'is', null), eb('a.device_rp_uuid', 'is', null)]),
    )
    .groupBy('rc.value')

const tally = (rows: readonly { rc: string; n: number | string }[]) =>
  new Map(rows.map((r) => [r.rc, Number(r.n)]))

/** Units `projectId` holds, by resource class, as last committed (the API's read). */
export async function readQuotaUsage(db: ReadDb, projectId: string): Promise<Map<string, number>> {
  return tally(await quotaHoldings(db, projectId).execute())
}
