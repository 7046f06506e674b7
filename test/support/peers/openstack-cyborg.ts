/**
 * OpenStack Cyborg databases for the import tests: a fresh MariaDB database loaded with the recorded
 * 9.0.0 dump and, on top, the scripts of test/fixtures/openstack-cyborg/ (README.md there), through
 * mysql2 with multiple statements, as the `mariadb` client would run them; or the same rows copied
 * into a fresh PostgreSQL database made with postgresql-schema.sql.
 */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import pg from 'pg'
import { createConnection } from 'mysql2/promise'
import { parseConnectionUrl } from '../../../src/db/core/connection.js'
import { MYSQL_URL, POSTGRES_URL } from '../db.js'
import { ROOT } from '../service.js'

export const FIXTURE_DIR = path.join(ROOT, 'test/fixtures/openstack-cyborg')

/** The recorded dump: OpenStack Cyborg 9.0.0, fake driver, host `vm` (cyborg-9.0.0.md). */
export const DUMP_900 = 'cyborg-9.0.0.sql'
/** Revision 6c77bd6afea5 on top of it (and the device disabled). */
export const LATER_6C77 = '6c77bd6afea5-add-device-status.sql'
/** Hand-written rows the import cannot map, one per reason. */
export const UNMAPPABLE = 'unmappable-rows.sql'
/** The dump brought to OpenStack Cyborg 17.0.0 (b47c8f2d1e3a) and its online data migrations. */
export const CYBORG_1700 = 'b47c8f2d1e3a-cyborg-17.0.0.sql'
/** Hand-written devices of 17.0.0's new types in its new device states, on top of CYBORG_1700. */
export const DEVICE_STATES_1700 = '17.0.0-device-states.sql'

/**
 * The requests CYBORG_1700's backfill gives a project (those naming an instance), with their new
 * `updated_at` as OpenStack shows it: every other field is as expected.json says.
 */
export const BACKFILLED_1700: Readonly<Record<string, { project_id: string; updated_at: string }>> =
  Object.fromEntries(
    [
      '5f23abc1-8938-4693-9bbc-e91bbd4919ce',
      'a54ce359-e053-44eb-b8e9-077335a8ceb2',
      '2e8241e4-d0e1-49ae-b1da-990c0965cd9e',
      '5c12f8f7-b970-4760-bcb0-1021a5199ee0',
    ].map((uuid) => [
      uuid,
      { project_id: '42000277e78a4f459ac3f41dada1ed60', updated_at: '2026-11-25T08:00:00+00:00' },
    ]),
  )

interface ExpectedArq {
  uuid: string
  state: string
  device_profile_name: string
  device_profile_group_id: number
  hostname: string | null
  device_rp_uuid: string | null
  instance_uuid: string | null
  project_id: string | null
  attach_handle_type: string
  attach_handle_info: Record<string, string>
  created_at: string
  updated_at: string | null
  from_database: { attach_handle?: { uuid: string } | null; deployable?: { uuid: string } | null }
}

/** What OpenStack Cyborg's API answered for the recorded state (expected.json), the fields used. */
export interface Expected {
  alembic_revision: string
  devices: { uuid: string; type: string; vendor: string; model: string; hostname: string }[]
  deployables: { uuid: string; name: string; rp_uuid: string; num_accelerators: number }[]
  device_profiles: {
    uuid: string
    name: string
    description: string | null
    groups: Record<string, string>[]
  }[]
  accelerator_requests: ExpectedArq[]
  attach_handles: { uuid: string; in_use: boolean; attach_info: Record<string, string> }[]
  instances: { instance_uuid: string; arqs: string[] }[]
}

export const EXPECTED = JSON.parse(
  readFileSync(path.join(FIXTURE_DIR, 'expected.json'), 'utf8'),
) as Expected

export interface OpenStackDatabase {
  /** As OpenStack's cyborg.conf would name it: `mysql+pymysql://root@127.0.0.1:3306/<name>`. */
  url: string
  /** Runs more SQL on it. */
  run(sqlText: string): Promise<void>
  drop(): Promise<void>
}

/** A new MariaDB database holding the dump and then each of `scripts`, in order. */
export async function loadOpenStackCyborg(scripts: string[]): Promise<OpenStackDatabase> {
  const p = parseConnectionUrl(MYSQL_URL)
  const name = `osc_t_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`
  const admin = { host: p.host, port: p.port, user: p.user, password: p.password }
  const root = await createConnection(admin)
  try {
    await root.query(`CREATE DATABASE ${name} CHARACTER SET utf8mb4`)
  } finally {
    await root.end()
  }
  const run = async (sqlText: string) => {
    const conn = await createConnection({ ...admin, database: name, multipleStatements: true })
    try {
      await conn.query(sqlText)
    } finally {
      await conn.end()
    }
  }
  const drop = async () => {
    const conn = await createConnection(admin)
    try {
      await conn.query(`DROP DATABASE IF EXISTS ${name}`)
    } finally {
      await conn.end()
    }
  }
  try {
    for (const script of scripts) await run(readFileSync(path.join(FIXTURE_DIR, script), 'utf8'))
  } catch (err) {
    await drop()
    throw err
  }
  const auth = p.password ? `${p.user}:${encodeURIComponent(p.password)}` : p.user
  return { url: `mysql+pymysql://${auth}@${p.host}:${p.port}/${name}`, run, drop }
}

/** Tables in foreign-key order. */
const COPY_ORDER = [
  'alembic_version',
  'devices',
  'deployables',
  'attributes',
  'controlpath_ids',
  'attach_handles',
  'device_profiles',
  'extended_accelerator_requests',
]

/**
 * The rows `scripts` leave in MariaDB, copied into a new PostgreSQL database holding OpenStack
 * Cyborg's tables (postgresql-schema.sql: revision 4cc1d79978fc only, so no 6c77bd6afea5 script).
 */
export async function loadOpenStackCyborgOnPostgres(scripts: string[]): Promise<OpenStackDatabase> {
  const maria = await loadOpenStackCyborg(scripts)
  const p = parseConnectionUrl(POSTGRES_URL)
  const name = `osc_t_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`
  const client = (database: string) =>
    new pg.Client({ host: p.host, port: p.port, user: p.user, password: p.password, database })
  const admin = async (sqlText: string) => {
    const c = client(p.database!)
    await c.connect()
    try {
      await c.query(sqlText)
    } finally {
      await c.end()
    }
  }
  await admin(`CREATE DATABASE ${name}`)
  const target = client(name)
  const m = parseConnectionUrl(maria.url)
  const source = await createConnection({
    host: m.host,
    port: m.port,
    user: m.user,
    password: m.password,
    database: m.database,
    dateStrings: true,
  })
  try {
    await target.connect()
    await target.query(readFileSync(path.join(FIXTURE_DIR, 'postgresql-schema.sql'), 'utf8'))
    for (const table of COPY_ORDER) {
      const [rows] = await source.query(`SELECT * FROM ${table} ORDER BY 1`)
      for (const row of rows as Record<string, unknown>[]) {
        const cols = Object.keys(row)
        await target.query(
          `INSERT INTO ${table} (${cols.map((c) => `"${c}"`).join(', ')}) VALUES (${cols.map((_, i) => `$${i + 1}`).join(', ')})`,
          cols.map((c) => row[c]),
        )
      }
    }
  } finally {
    await source.end()
    await target.end()
    await maria.drop()
  }
  const auth = p.password ? `${p.user}:${encodeURIComponent(p.password)}` : p.user
  return {
    url: `postgresql://${auth}@${p.host}:${p.port}/${name}`,
    run: async (sqlText) => {
      const c = client(name)
      await c.connect()
      try {
        await c.query(sqlText)
      } finally {
        await c.end()
      }
    },
    drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  }
}

/** OpenStack's naive UTC `2026-11-25T06:58:52+00:00` as we store and show it. */
export const ourTimestamp = (t: string): string => t.replace(/\+00:00$/, '.000000+00:00')

/** A PCI attach info with zero-padded fields, as our drivers (and the import) write it. */
export function paddedInfo(info: Record<string, string>): Record<string, string> {
  const width: Record<string, number> = { domain: 4, bus: 2, device: 2, function: 1 }
  return Object.fromEntries(
    Object.entries(info).map(([k, v]) => [k, width[k] ? v.padStart(width[k], '0') : v]),
  )
}
