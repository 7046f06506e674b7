/**
 * `cyborg db check` (docs/operations.md): read-only integrity checks of the database. Each finding
 * names its kind and the rows; an empty list means nothing was found. Placement drift is checked
 * by the caller (src/main/db-check-command.ts), which can reach Placement.
 */
import { sql, type RawBuilder } from 'kysely'
import type { ReadDb } from './connection.js'

export interface Finding {
  kind: string
  message: string
}

interface Check {
  kind: string
  /** Rows of `uuid` (and `detail`) that break the rule. */
  query: RawBuilder<{ uuid: string; detail?: string | null }>
  say: (row: { uuid: string; detail?: string | null }) => string
}

const CHECKS: Check[] = [
  {
    kind: 'orphan_deployable',
    query: sql`select p.uuid from deployables p left join devices d on d.id = p.device_id where d.id is null`,
    say: (r) => `deployable ${r.uuid} names a device that does not exist`,
  },
  {
    kind: 'orphan_attribute',
    query: sql`select a.uuid from attributes a left join deployables p on p.id = a.deployable_id where p.id is null`,
    say: (r) => `attribute ${r.uuid} names a deployable that does not exist`,
  },
  {
    kind: 'orphan_handle',
    query: sql`select h.uuid from attach_handles h left join deployables p on p.id = h.deployable_id where p.id is null`,
    say: (r) => `attach handle ${r.uuid} names a deployable that does not exist`,
  },
  {
    kind: 'arq_missing_handle',
    query: sql`select a.uuid from accelerator_requests a left join attach_handles h on h.id = a.attach_handle_id
      where a.attach_handle_id is not null and h.id is null`,
    say: (r) => `accelerator request ${r.uuid} names an attach handle that does not exist`,
  },
  {
    kind: 'arq_missing_deployable',
    query: sql`select a.uuid from accelerator_requests a left join deployables p on p.id = a.deployable_id
      where a.deployable_id is not null and p.id is null`,
    say: (r) => `accelerator request ${r.uuid} names a deployable that does not exist`,
  },
  {
    kind: 'arq_missing_profile',
    query: sql`select a.uuid from accelerator_requests a left join device_profiles d on d.id = a.device_profile_id
      where a.device_profile_id is not null and d.id is null`,
    say: (r) => `accelerator request ${r.uuid} names a device profile that does not exist`,
  },
  {
    kind: 'bound_without_handle',
    query: sql`select uuid from accelerator_requests where state = 'Bound' and attach_handle_id is null`,
    say: (r) => `accelerator request ${r.uuid} is Bound but holds no attach handle`,
  },
  {
    kind: 'held_handle_not_in_use',
    query: sql`select h.uuid, a.uuid as detail from attach_handles h join accelerator_requests a on a.attach_handle_id = h.id
      where h.in_use = 0`,
    say: (r) =>
      `attach handle ${r.uuid} is held by accelerator request ${r.detail} but marked free`,
  },
  {
    kind: 'handle_in_use_by_nobody',
    query: sql`select h.uuid from attach_handles h
      where h.in_use = 1 and h.clean_state is null and h.reconfig_uuid is null
        and not exists (select 1 from accelerator_requests a where a.attach_handle_id = h.id)`,
    say: (r) =>
      `attach handle ${r.uuid} is in use, but no request holds it, it is not cleaning and no program or configure holds it`,
  },
  {
    kind: 'handle_held_twice',
    query: sql`select h.uuid, count(*) as detail from attach_handles h
      join accelerator_requests a on a.attach_handle_id = h.id group by h.uuid having count(*) > 1`,
    say: (r) => `attach handle ${r.uuid} is held by ${r.detail} accelerator requests`,
  },
]

/** Runs every check; the findings in check order. */
export async function checkDatabase(db: ReadDb): Promise<Finding[]> {
  const findings: Finding[] = []
  for (const check of CHECKS) {
    const { rows } = await check.query.execute(db as never)
    for (const row of rows) findings.push({ kind: check.kind, message: check.say(row) })
  }
  return findings
}
