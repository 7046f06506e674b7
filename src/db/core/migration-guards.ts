/**
 * What undoing each migration would lose (docs/operations.md, "What a downgrade keeps").
 * Before a downgrade undoes a migration, its guard counts the rows whose meaning its `down()` would
 * drop; `cyborg db downgrade` refuses while any guard finds some, unless `--force`. A migration
 * whose `down()` loses nothing an operator would miss has no guard: an index, a cache that the next
 * sync rewrites (`placement_hash`), lock rows that the next bind recreates (`arq_instances`,
 * `quota_projects`), lost-commit markers, identities that the migration's `up()` rebuilds from the
 * devices present.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely'
import type { Database } from './schema.js'

/** What undoing a migration would drop now, or undefined when nothing. */
type Guard = (db: Kysely<Database>) => Promise<string | undefined>

/** `n what` when `select count(*) from table where …` finds n > 0 rows. */
const rowsOf =
  (table: string, what: string, where: RawBuilder<unknown> = sql`1 = 1`): Guard =>
  async (db) => {
    const { rows } = await sql<{
      n: number | string
    }>`select count(*) as n from ${sql.table(table)} where ${where}`.execute(db)
    const n = Number(rows[0]?.n ?? 0)
    return n > 0 ? `${n} ${what}` : undefined
  }

/** Every guard's finding, joined; undefined when none found anything. */
const allOf =
  (...guards: Guard[]): Guard =>
  async (db) => {
    const found: string[] = []
    for (const guard of guards) {
      const lost = await guard(db)
      if (lost !== undefined) found.push(lost)
    }
    return found.length > 0 ? found.join(', ') : undefined
  }

/** Migration name → what undoing it would drop. */
const GUARDS: Readonly<Record<string, Guard>> = {
  '0001-initial': allOf(
    rowsOf('devices', 'device(s)'),
    rowsOf('device_profiles', 'device profile(s)'),
    rowsOf('accelerator_requests', 'accelerator request(s)'),
  ),
  '0002-placement': rowsOf(
    'deployables',
    'deployable(s) pending removal (they would stay for good)',
    sql`removal_pending = 1`,
  ),
  '0005-v1-attachments': allOf(
    rowsOf(
      'accelerator_requests',
      'v1 attachment(s) (detach them first)',
      sql`device_profile_id is null`,
    ),
    rowsOf('deployables', 'v1 acc_specs', sql`acc_specs is not null`),
  ),
  '0007-device-health': rowsOf(
    'devices',
    'device health reason(s) (the health itself stays)',
    sql`health_reason is not null`,
  ),
  '0008-health-transitions': rowsOf('health_transitions', 'health transition(s)'),
  '0009-events': rowsOf('events', 'event(s) not yet delivered', sql`sent_at is null`),
  '0010-webhooks': rowsOf('webhooks', 'webhook endpoint(s) and their deliveries'),
  '0012-device-identities': rowsOf(
    'device_identities',
    'remembered device(s) absent now (they would come back as new devices)',
    sql`device_uuid not in (select uuid from devices)`,
  ),
  '0013-custody': rowsOf('custody_records', 'custody record(s)'),
  '0014-handle-cleaning': rowsOf(
    'attach_handles',
    'unit(s) cleaning or failed (they would stay out of service with nothing to clean them)',
    sql`clean_state is not null`,
  ),
  '0015-reconfig-fence': rowsOf(
    'attach_handles',
    'unit(s) held by an unfinished program or configure (they would go back in service unchecked)',
    sql`reconfig_uuid is not null`,
  ),
  '0018-handle-mdev-uuid': rowsOf(
    'attach_handles',
    'vGPU unit(s) held or cleaning under their own mdev uuid (release and clean would name the wrong mdev)',
    sql`in_use = 1 and mdev_uuid is not null`,
  ),
}

/** The migrations that have a guard: their `down()` can drop data. */
export const GUARDED_MIGRATIONS: readonly string[] = Object.keys(GUARDS)

/** What undoing `migrations` (newest first, all applied) would drop, in that order. */
export async function downgradeLosses(
  db: Kysely<Database>,
  migrations: readonly string[],
): Promise<{ migration: string; loss: string }[]> {
  const losses: { migration: string; loss: string }[] = []
  for (const migration of migrations) {
    const loss = await GUARDS[migration]?.(db)
    if (loss !== undefined) losses.push({ migration, loss })
  }
  return losses
}
