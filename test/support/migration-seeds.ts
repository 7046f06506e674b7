/**
 * Representative rows for each migration, written with plain SQL right after that migration is
 * applied (so with the schema as it is then, not as schema.ts has it now), plus a probe that the
 * schema works at any revision, and table snapshots to compare across a migration step
 * (test/core/migration-walk.test.ts). At the latest revision the rows are consistent:
 * `cyborg db check` finds nothing. Every migration that has a downgrade guard gets rows that the
 * guard refuses to drop, so that a walk down exercises every guard.
 */
import { sql, type Kysely } from 'kysely'
import type { Database } from '../../src/db/core/schema.js'

type Db = Kysely<Database>
type Row = Record<string, unknown>

export const NOW = '2026-11-26T00:00:00.000000+00:00'
const HOST = 'walk-1'
const u = (n: number) => `7a110000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`

/** The uuids the seeds use, by role. */
export const SEED = {
  devA: u(1),
  devB: u(2),
  depA: u(3),
  depB: u(4),
  handles: [u(11), u(12), u(13), u(14), u(15)],
  profile: u(20),
  arq: u(21),
  v1Arq: u(22),
  absentDevice: u(30),
}

export async function insert(db: Db, table: string, row: Row): Promise<void> {
  const cols = Object.keys(row)
  await sql`insert into ${sql.table(table)} (${sql.join(cols.map((c) => sql.ref(c)))})
    values (${sql.join(cols.map((c) => row[c]))})`.execute(db)
}

async function update(db: Db, table: string, uuid: string, set: Row): Promise<void> {
  const pairs = Object.entries(set).map(([c, v]) => sql`${sql.ref(c)} = ${v}`)
  await sql`update ${sql.table(table)} set ${sql.join(pairs)} where uuid = ${uuid}`.execute(db)
}

async function idOf(db: Db, table: string, uuid: string): Promise<number> {
  const { rows } = await sql<{
    id: number
  }>`select id from ${sql.table(table)} where uuid = ${uuid}`.execute(db)
  if (!rows[0]) throw new Error(`no ${table} ${uuid}`)
  return Number(rows[0].id)
}

const device = (uuid: string, bus: string) => ({
  uuid,
  type: 'GPU',
  vendor: '10de',
  model: 'A100',
  hostname: HOST,
  cpid_type: 'PCI',
  cpid_info: `{"bus":"${bus}","device":"00","domain":"0000","function":"0"}`,
  created_at: NOW,
})

async function seedInitial(db: Db): Promise<void> {
  await insert(db, 'devices', device(SEED.devA, '01'))
  await insert(db, 'devices', device(SEED.devB, '02'))
  for (const [dep, dev, bus] of [
    [SEED.depA, SEED.devA, '01'],
    [SEED.depB, SEED.devB, '02'],
  ] as const)
    await insert(db, 'deployables', {
      uuid: dep,
      device_id: await idOf(db, 'devices', dev),
      name: `${HOST}_0000:${bus}:00.0`,
      num_accelerators: 5,
      rp_uuid: dep.replace('7a11', '7a12'),
      driver_name: 'nvidia-gpu',
      created_at: NOW,
    })
  const depA = await idOf(db, 'deployables', SEED.depA)
  for (const [i, [key, value]] of [
    ['rc', 'PGPU'],
    ['trait0', 'CUSTOM_WALK'],
  ].entries())
    await insert(db, 'attributes', {
      uuid: u(40 + i),
      deployable_id: depA,
      key,
      value,
      created_at: NOW,
    })
  for (const [i, uuid] of SEED.handles.entries())
    await insert(db, 'attach_handles', {
      uuid,
      deployable_id: depA,
      attach_type: 'PCI',
      attach_info: `{"bus":"01","function":"${i}"}`,
      in_use: i === 0 ? 1 : 0,
      created_at: NOW,
    })
  await insert(db, 'device_profiles', {
    uuid: SEED.profile,
    name: 'walk-gpu',
    profile_json: '[{"resources:PGPU":"1"}]',
    created_at: NOW,
  })
  await insert(db, 'accelerator_requests', {
    uuid: SEED.arq,
    state: 'Bound',
    device_profile_id: await idOf(db, 'device_profiles', SEED.profile),
    device_profile_group_id: 0,
    project_id: 'p1',
    hostname: HOST,
    device_rp_uuid: SEED.depA.replace('7a11', '7a12'),
    instance_uuid: u(50),
    attach_handle_id: await idOf(db, 'attach_handles', SEED.handles[0]!),
    deployable_id: depA,
    created_at: NOW,
  })
  await insert(db, 'services', {
    host: HOST,
    binary: 'cyborg-agent',
    version: '0.1.0',
    report_hash: 'h',
    last_seen: NOW,
    created_at: NOW,
  })
  await insert(db, 'agent_drivers', {
    host: HOST,
    driver_name: 'nvidia-gpu',
    version: '1',
    state: 'enabled',
    created_at: NOW,
  })
}

const hold = (n: number, set: Row) => async (db: Db) =>
  update(db, 'attach_handles', SEED.handles[n]!, { in_use: 1, ...set })

/** Migration name → the rows it makes room for. */
export const SEEDS: Readonly<Record<string, (db: Db) => Promise<void>>> = {
  '0001-initial': seedInitial,
  '0002-placement': async (db) => {
    await update(db, 'deployables', SEED.depA, { placement_hash: 'a'.repeat(64) })
    await update(db, 'deployables', SEED.depB, { removal_pending: 1 })
  },
  '0004-arq-instances': (db) =>
    insert(db, 'arq_instances', { instance_uuid: u(50), updated_at: NOW }),
  '0005-v1-attachments': async (db) => {
    await update(db, 'deployables', SEED.depA, { acc_specs: '{"mode":"walk"}' })
    await insert(db, 'accelerator_requests', {
      uuid: SEED.v1Arq,
      state: 'Bound',
      device_profile_id: null,
      device_profile_group_id: 0,
      hostname: HOST,
      attach_handle_id: await idOf(db, 'attach_handles', SEED.handles[1]!),
      deployable_id: await idOf(db, 'deployables', SEED.depA),
      created_at: NOW,
    })
    await hold(1, {})(db)
  },
  '0006-commit-markers': (db) => insert(db, 'commit_markers', { id: u(60), created_at: NOW }),
  '0007-device-health': (db) =>
    update(db, 'devices', SEED.devB, {
      health: 'failed',
      health_reason: 'walk: gone from its report',
      health_updated_at: NOW,
    }),
  '0008-health-transitions': async (db) => {
    await update(db, 'devices', SEED.devA, { healthy_reports: 2 })
    await insert(db, 'health_transitions', {
      device_uuid: SEED.devB,
      hostname: HOST,
      from_health: 'ok',
      to_health: 'failed',
      reason: 'walk',
      created_at: NOW,
    })
  },
  '0009-events': async (db) => {
    for (const [n, sent] of [
      [70, NOW],
      [71, null],
    ] as const)
      await insert(db, 'events', {
        uuid: u(n),
        event_type: 'accelerator.device.added',
        priority: 'INFO',
        resource_type: 'device',
        resource_uuid: SEED.devA,
        payload: '{}',
        created_at: NOW,
        sent_at: sent,
      })
  },
  '0010-webhooks': async (db) => {
    await insert(db, 'webhooks', {
      uuid: u(80),
      url: 'https://hooks.example/walk',
      secret: 's'.repeat(32),
      event_types: '[]',
      project_ids: '[]',
      created_at: NOW,
    })
    await insert(db, 'webhook_deliveries', {
      webhook_id: await idOf(db, 'webhooks', u(80)),
      event_uuid: u(71),
      event_type: 'accelerator.device.added',
      body: '{}',
      state: 'pending',
      next_attempt_at: NOW,
      created_at: NOW,
    })
  },
  '0011-quota-projects': (db) =>
    insert(db, 'quota_projects', { project_id: 'p1', updated_at: NOW }),
  '0012-device-identities': (db) =>
    insert(db, 'device_identities', {
      hostname: HOST,
      identity_key: 'serial:GONE-1',
      device_uuid: SEED.absentDevice,
      lifecycle: 'active',
      status: 'enabled',
      created_at: NOW,
    }),
  '0013-custody': (db) =>
    insert(db, 'custody_records', {
      uuid: u(90),
      kind: 'allocation',
      allocation_uuid: u(91),
      arq_uuid: u(92),
      device_uuid: SEED.devA,
      hostname: HOST,
      bound_at: NOW,
      released_at: NOW,
      created_at: NOW,
    }),
  '0014-handle-cleaning': hold(2, { clean_state: 'pending', clean_since: NOW }),
  '0015-reconfig-fence': hold(3, {
    reconfig_uuid: u(99),
    reconfig_kind: 'program',
    reconfig_since: NOW,
  }),
  '0016-arq-bound-at': (db) => update(db, 'accelerator_requests', SEED.arq, { bound_at: NOW }),
  '0017-arq-bind-id': (db) => update(db, 'accelerator_requests', SEED.arq, { bind_id: u(93) }),
  '0018-handle-mdev-uuid': hold(0, { mdev_uuid: u(98) }),
  // An index only: nothing new to write.
  '0019-events-resource-idx': async () => {},
}

/**
 * Proves the schema works at its revision: writes a device, deployable, handle, profile and a
 * request holding the handle (the columns of 0001, the rest defaulted), reads them back joined,
 * and deletes them. Throws if any step fails.
 */
export async function probe(db: Db): Promise<void> {
  const p = (n: number) => u(0xf00 + n)
  await insert(db, 'devices', { ...device(p(1), 'ff'), hostname: 'probe' })
  await insert(db, 'deployables', {
    uuid: p(2),
    device_id: await idOf(db, 'devices', p(1)),
    name: 'probe_0000:ff:00.0',
    num_accelerators: 1,
    created_at: NOW,
  })
  const dep = await idOf(db, 'deployables', p(2))
  await insert(db, 'attach_handles', {
    uuid: p(3),
    deployable_id: dep,
    attach_type: 'PCI',
    attach_info: '{}',
    in_use: 1,
    created_at: NOW,
  })
  await insert(db, 'device_profiles', {
    uuid: p(4),
    name: 'probe',
    profile_json: '[]',
    created_at: NOW,
  })
  await insert(db, 'accelerator_requests', {
    uuid: p(5),
    state: 'Bound',
    device_profile_id: await idOf(db, 'device_profiles', p(4)),
    attach_handle_id: await idOf(db, 'attach_handles', p(3)),
    deployable_id: dep,
    created_at: NOW,
  })
  const { rows } = await sql<{ host: string }>`select d.hostname as host
    from accelerator_requests a join attach_handles h on h.id = a.attach_handle_id
    join deployables p on p.id = h.deployable_id join devices d on d.id = p.device_id
    where a.uuid = ${p(5)}`.execute(db)
  if (rows.length !== 1 || rows[0]!.host !== 'probe') throw new Error('probe row not read back')
  for (const [table, n] of [
    ['accelerator_requests', 5],
    ['device_profiles', 4],
    ['attach_handles', 3],
    ['deployables', 2],
    ['devices', 1],
  ] as const)
    await sql`delete from ${sql.table(table)} where uuid = ${p(n)}`.execute(db)
}

/** Table → its rows (sorted, as JSON text) and its columns; the migrator's own tables left out. */
export type Snapshot = Map<string, { columns: string[]; rows: Row[] }>

export async function snapshot(db: Db): Promise<Snapshot> {
  const out: Snapshot = new Map()
  for (const t of await db.introspection.getTables()) {
    if (t.name.startsWith('cyborg_migrations')) continue
    const { rows } = await sql<Row>`select * from ${sql.table(t.name)}`.execute(db)
    out.set(t.name, { columns: t.columns.map((c) => c.name).sort(), rows })
  }
  return out
}

/** `rows` reduced to `columns`, as sorted JSON lines: comparable across dialect-neutral steps. */
export function project(rows: readonly Row[], columns: readonly string[]): string[] {
  return rows
    .map((r) =>
      JSON.stringify(columns.map((c) => (typeof r[c] === 'bigint' ? Number(r[c]) : r[c]))),
    )
    .sort()
}
