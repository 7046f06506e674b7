/**
 * What quota counts (docs/quota.md): the units a project holds through binds Cyborg placed itself,
 * by resource class, and the per-project lock that makes counting and claiming one step.
 *
 * Held: a request in BindStarted, Bound or UnbindFailed that has a deployable, placed by Cyborg: a
 * v1 attachment (no device profile) or a standalone v2 bind (no provider chosen by Nova). A Nova
 * bind names its provider (`device_rp_uuid`), and Nova's own unified limits count it through
 * Placement. Each request holds one unit of its deployable's resource class (`rc` attribute).
 */
import { sql, type Kysely } from 'kysely'
import { dialectOf } from './connection.js'
import type { Database } from './schema.js'

const HOLDING = ['BindStarted', 'Bound', 'UnbindFailed']

/**
 * Takes the quota lock of `projectId` (an upsert of its `quota_projects` row), so that checks of
 * one project run one after the other through any number of conductors. Run it in the claim's
 * transaction before counting; it holds until that commits.
 */
export async function claimQuotaLock(
  db: Kysely<Database>,
  projectId: string,
  now: string,
): Promise<void> {
  const insert = db.insertInto('quota_projects').values({ project_id: projectId, updated_at: now })
  await (
    dialectOf(db) === 'mysql'
      ? insert.onDuplicateKeyUpdate({ updated_at: now })
      : insert.onConflict((oc) => oc.column('project_id').doUpdateSet({ updated_at: now }))
  ).execute()
}

/**
 * Units `projectId` holds, by resource class. In a transaction that holds the project's quota
 * lock this sees every committed claim: on MariaDB it is a locking read, which reads the latest
 * rows rather than the transaction's older snapshot.
 */
export async function countQuotaUsage(
  db: Kysely<Database>,
  projectId: string,
): Promise<Map<string, number>> {
  let q = db
    .selectFrom('accelerator_requests as a')
    .innerJoin('attributes as rc', (j) =>
      j.onRef('rc.deployable_id', '=', 'a.deployable_id').on('rc.key', '=', 'rc'),
    )
    .select(['a.id', 'rc.value as rc'])
    .where('a.project_id', '=', projectId)
    .where('a.state', 'in', HOLDING)
    .where((eb) =>
      eb.or([eb('a.device_profile_id', 'is', null), eb('a.device_rp_uuid', 'is', null)]),
    )
  if (dialectOf(db) === 'mysql') q = q.modifyEnd(sql`lock in share mode`)
  const usage = new Map<string, number>()
  for (const row of await q.execute()) usage.set(row.rc, (usage.get(row.rc) ?? 0) + 1)
  return usage
}
