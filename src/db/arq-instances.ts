/**
 * The bind locks of instances (`arq_instances`): one row per instance, upserted by a bind so that
 * binds naming one instance run one after the other through any number of conductors, and swept
 * once no request names the instance any more.
 */
import { sql, type Kysely } from 'kysely'
import type { DialectName } from './core/connection.js'
import type { Database } from './core/schema.js'

/**
 * Takes the bind lock of each instance (an upsert of its `arq_instances` row, in sorted order), so
 * that binds naming one instance run one after the other, through any number of conductors. Run it
 * in the bind's transaction, before `listBoundArqsOfInstance` (arqs.ts); the lock holds until that commits.
 */
export async function claimInstanceLocks(
  db: Kysely<Database>,
  dialect: DialectName,
  instances: Iterable<string>,
  now: string,
): Promise<void> {
  for (const instance of [...new Set(instances)].sort()) {
    const insert = db
      .insertInto('arq_instances')
      .values({ instance_uuid: instance, updated_at: now })
    await (
      dialect === 'mysql'
        ? insert.onDuplicateKeyUpdate({ updated_at: touched(now) })
        : insert.onConflict((oc) => oc.column('instance_uuid').doUpdateSet({ updated_at: now }))
    ).execute()
  }
}

/**
 * The new `updated_at` of an instance's lock row on MariaDB: always a change. A Galera cluster
 * certifies only the rows a transaction changed, and MariaDB leaves a row holding the very value
 * written untouched: two binds of one instance at the same instant, through two nodes, would then
 * both commit. So a row already holding `now` gets `now~` (which still sorts after `now`, for
 * `deleteStaleInstanceLocks`), and one holding `now~` gets `now`.
 */
const touched = (now: string) => sql<string>`IF(updated_at = ${now}, ${`${now}~`}, ${now})`

/** Deletes the bind locks of instances that no request names and no bind touched since `cutoff`. */
export async function deleteStaleInstanceLocks(
  db: Kysely<Database>,
  cutoff: string,
): Promise<number> {
  const res = await db
    .deleteFrom('arq_instances')
    .where('updated_at', '<', cutoff)
    .where(({ not, exists, selectFrom, ref }) =>
      not(
        exists(
          selectFrom('accelerator_requests')
            .select('id')
            .where('instance_uuid', '=', ref('arq_instances.instance_uuid')),
        ),
      ),
    )
    .executeTakeFirst()
  return Number(res.numDeletedRows)
}
