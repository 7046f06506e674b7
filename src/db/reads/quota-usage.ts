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
import { dialectOf, type ReadDb } from '../core/connection.js'
import { precompile } from '../core/precompiled.js'
import type { Database } from '../core/schema.js'

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
  const dialect = dialectOf(db)
  if (dialect === 'sqlite') return // one writer: the claim's transaction is alone already
  const insert = db.insertInto('quota_projects').values({ project_id: projectId, updated_at: now })
  await (
    dialect === 'mysql'
      ? insert.onDuplicateKeyUpdate({ updated_at: now })
      : insert.onConflict((oc) => oc.column('project_id').doUpdateSet({ updated_at: now }))
  ).execute()
}

/**
 * The units `projectId` holds, counted by resource class in SQL.
 */
const holdings = (db: ReadDb, projectId: string) =>
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
  return tally(await holdings(db, projectId).execute())
}

/** One class's units, precompiled (a claim runs it in every bind): plain, and MariaDB's locking read. */
const held = precompile((db: ReadDb, projectId: string, rc: string) =>
  holdings(db, projectId).where('rc.value', '=', rc),
)
const heldLocking = precompile((db: ReadDb, projectId: string, rc: string) =>
  holdings(db, projectId)
    .where('rc.value', '=', rc)
    .modifyEnd(sql`lock in share mode`),
)

/**
 * Units `projectId` holds of `classes`, in a claim's transaction. In a transaction that holds the
 * project's quota lock this sees every committed claim: on MariaDB it is a locking read, which
 * reads the latest rows rather than the transaction's older snapshot.
 */
export async function countQuotaUsage(
  db: Kysely<Database>,
  projectId: string,
  classes: readonly string[],
): Promise<Map<string, number>> {
  const count = dialectOf(db) === 'mysql' ? heldLocking : held
  const usage = new Map<string, number>()
  for (const rc of classes) usage.set(rc, Number((await count.first(db, projectId, rc))?.n ?? 0))
  return usage
}
