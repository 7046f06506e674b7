/**
 * `cyborg db check` (docs/operations.md): read-only integrity checks of a database at the
 * current schema. Each finding names its kind and the rows; an empty list means nothing was found.
 * The foreign keys are declared (RESTRICT), but a database restored or imported with its checks
 * off (`SET FOREIGN_KEY_CHECKS = 0`, SQLite's `foreign_keys = OFF`) can still hold orphans, and the
 * rules of in-use units are the code's, not the schema's. Placement drift is checked by the caller
 * (src/main/commands/db-check-command.ts), which can reach Placement.
 */
import { sql, type RawBuilder } from 'kysely'
import type { ReadDb } from './connection.js'

export interface Finding {
  /** A stable word for scripts: `orphan_attribute`, `handle_in_use_by_nobody`, `placement_drift`, … */
  kind: string
  /** One line naming the rows. */
  message: string
}

type Row = { uuid: string; detail?: string | number | null }

interface Check {
  kind: string
  /** The rows that break the rule: `uuid` (and `detail`). */
  query: RawBuilder<Row>
  say: (row: Row) => string
}

/** `child`'s rows whose `column` names no row of `parent`. */
const orphans = (
  kind: string,
  child: string,
  column: string,
  parent: string,
  say: Check['say'],
) => ({
  kind,
  query: sql<Row>`select c.uuid from ${sql.table(child)} c
    where c.${sql.ref(column)} is not null
      and not exists (select 1 from ${sql.table(parent)} p where p.id = c.${sql.ref(column)})
    order by c.uuid`,
  say,
})

const CHECKS: readonly Check[] = [
  orphans(
    'orphan_deployable',
    'deployables',
    'device_id',
    'devices',
    (r) => `deployable ${r.uuid} names a device that does not exist`,
  ),
  orphans(
    'orphan_deployable',
    'deployables',
    'parent_id',
    'deployables',
    (r) => `deployable ${r.uuid} names a parent deployable that does not exist`,
  ),
  orphans(
    'orphan_deployable',
    'deployables',
    'root_id',
    'deployables',
    (r) => `deployable ${r.uuid} names a root deployable that does not exist`,
  ),
  orphans(
    'orphan_attribute',
    'attributes',
    'deployable_id',
    'deployables',
    (r) => `attribute ${r.uuid} names a deployable that does not exist`,
  ),
  orphans(
    'orphan_handle',
    'attach_handles',
    'deployable_id',
    'deployables',
    (r) => `attach handle ${r.uuid} names a deployable that does not exist`,
  ),
  orphans(
    'arq_missing_profile',
    'accelerator_requests',
    'device_profile_id',
    'device_profiles',
    (r) => `accelerator request ${r.uuid} names a device profile that does not exist`,
  ),
  orphans(
    'arq_missing_handle',
    'accelerator_requests',
    'attach_handle_id',
    'attach_handles',
    (r) => `accelerator request ${r.uuid} names an attach handle that does not exist`,
  ),
  orphans(
    'arq_missing_deployable',
    'accelerator_requests',
    'deployable_id',
    'deployables',
    (r) => `accelerator request ${r.uuid} names a deployable that does not exist`,
  ),
  {
    kind: 'orphan_webhook_delivery',
    query: sql<Row>`select d.event_uuid as uuid, d.webhook_id as detail from webhook_deliveries d
      where not exists (select 1 from webhooks w where w.id = d.webhook_id) order by d.id`,
    say: (r) => `a delivery of event ${r.uuid} names webhook id ${r.detail}, which does not exist`,
  },
  {
    kind: 'arq_handle_elsewhere',
    query: sql<Row>`select a.uuid, h.uuid as detail from accelerator_requests a
      join attach_handles h on h.id = a.attach_handle_id
      where a.deployable_id is not null and h.deployable_id <> a.deployable_id order by a.uuid`,
    say: (r) =>
      `accelerator request ${r.uuid} holds attach handle ${r.detail}, which belongs to another deployable than the one it names`,
  },
  {
    kind: 'bound_without_handle',
    query: sql<Row>`select uuid from accelerator_requests
      where state = 'Bound' and attach_handle_id is null order by uuid`,
    say: (r) => `accelerator request ${r.uuid} is Bound but holds no attach handle`,
  },
  {
    kind: 'held_handle_not_in_use',
    query: sql<Row>`select h.uuid, a.uuid as detail from attach_handles h
      join accelerator_requests a on a.attach_handle_id = h.id where h.in_use = 0 order by h.uuid`,
    say: (r) =>
      `attach handle ${r.uuid} is held by accelerator request ${r.detail} but marked free (a claim could hand it out again)`,
  },
  {
    kind: 'handle_in_use_by_nobody',
    query: sql<Row>`select h.uuid from attach_handles h
      where h.in_use = 1 and h.clean_state is null and h.reconfig_uuid is null
        and not exists (select 1 from accelerator_requests a where a.attach_handle_id = h.id)
      order by h.uuid`,
    say: (r) =>
      `attach handle ${r.uuid} is in use, but no request or v1 attachment holds it, it is not ` +
      `cleaning and no program or configure fences it (out of service for nothing)`,
  },
]

/** Runs every check, in order; the findings. */
export async function checkDatabase(db: ReadDb): Promise<Finding[]> {
  const findings: Finding[] = []
  for (const check of CHECKS) {
    const { rows } = await check.query.execute(db)
    for (const row of rows) findings.push({ kind: check.kind, message: check.say(row) })
  }
  return findings
}

/** Every host that has devices, in name order (the hosts whose providers Placement should hold). */
export async function listDeviceHosts(db: ReadDb): Promise<string[]> {
  const rows = await db
    .selectFrom('devices')
    .select('hostname')
    .distinct()
    .orderBy('hostname')
    .execute()
  return rows.map((r) => r.hostname)
}
