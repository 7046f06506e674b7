/**
 * The per-project quota lock (docs/quota.md) and the count a claim takes under it, in the claim's
 * transaction (src/conductor/arq/quota-check.ts). What is counted (quotaHoldings) and the API's
 * read are src/db/reads/quota-usage.ts.
 */
import { sql, type Kysely } from 'kysely'
import { dialectOf, type ReadDb } from './core/connection.js'
import { precompile } from './core/precompiled.js'
import type { Database } from './core/schema.js'
import { quotaHoldings } from './reads/quota-usage.js'

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

/** One class's units, precompiled (a claim runs it in every bind): plain, and MariaDB's locking read. */
const held = precompile((db: ReadDb, projectId: string, rc: string) =>
  quotaHoldings(db, projectId).where('rc.value', '=', rc),
)
const heldLocking = precompile((db: ReadDb, projectId: string, rc: string) =>
  quotaHoldings(db, projectId)
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
