/**
 * What each migration's `down()` would lose (docs/operations.md, "Database tooling"). Before a
 * downgrade undoes a migration, its guard counts the rows whose data would go; `cyborg db
 * downgrade` refuses while any guard finds some, unless `--force`. A migration whose down() loses
 * nothing (an index, a cache column, transient rows) has no guard.
 */
import { sql, type Kysely } from 'kysely'
import type { Database } from './schema.js'

type Guard = (db: Kysely<Database>) => Promise<string | undefined>

const count = async (db: Kysely<Database>, query: ReturnType<typeof sql>) => {
  const { rows } = await (query as ReturnType<typeof sql<{ n: number | string }>>).execute(db)
  return Number(rows[0]?.n ?? 0)
}
const rowsOf =
  (table: string, what: string, where = sql`1 = 1`): Guard =>
  async (db) => {
    const n = await count(db, sql`select count(*) as n from ${sql.table(table)} where ${where}`)
    return n > 0 ? `${n} ${what}` : undefined
  }
const allOf =
  (...guards: Guard[]): Guard =>
  async (db) => {
    const found = (await Promise.all(guards.map((g) => g(db)))).filter((f) => f !== undefined)
    return found.length > 0 ? found.join(', ') : undefined
  }

/** Migration name → what undoing it would drop, when there is any. */
export const DOWNGRADE_GUARDS: Readonly<Record<string, Guard>> = {
  '0001-initial': allOf(
    rowsOf('devices', 'device(s)'),
    rowsOf('device_profiles', 'device profile(s)'),
    rowsOf('accelerator_requests', 'accelerator request(s)'),
  ),
  '0002-placement': rowsOf(
    'deployables',
    'deployable(s) pending removal',
    sql`removal_pending = 1`,
  ),
  '0004-arq-instances': rowsOf('arq_instances', 'instance lock(s)'),
  '0005-v1-attachments': allOf(
    rowsOf('accelerator_requests', 'v1 attachment(s)', sql`device_profile_id is null`),
    rowsOf('deployables', 'v1 acc_specs', sql`acc_specs is not null`),
  ),
  '0007-device-health': rowsOf(
    'devices',
    'device(s) whose health is not ok (the fence would go)',
    sql`health <> 'ok'`,
  ),
  '0008-health-transitions': rowsOf('health_transitions', 'health transition(s)'),
  '0009-events': rowsOf('events', 'event(s) not yet delivered', sql`sent_at is null`),
  '0010-webhooks': rowsOf('webhooks', 'webhook(s)'),
  '0011-quota-projects': rowsOf('quota_projects', 'quota project row(s)'),
  '0012-device-identities': rowsOf('device_identities', 'device identity row(s)'),
  '0013-custody': rowsOf('custody_records', 'custody record(s)'),
  '0014-handle-cleaning': rowsOf(
    'attach_handles',
    'unit(s) cleaning or failed (they would stay in use for good)',
    sql`clean_state is not null`,
  ),
  '0015-reconfig-fence': rowsOf(
    'attach_handles',
    'unit(s) held by an unfinished program or configure (they would go back in service unchecked)',
    sql`reconfig_uuid is not null`,
  ),
}
