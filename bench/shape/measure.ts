/**
 * What the production-shape benchmarks read around a load: each process's CPU time and RSS from
 * /proc (a process and its children, so that an API's cluster workers count with it), MariaDB's
 * `SHOW GLOBAL STATUS` counters (statements and commits), and the time each release spent
 * `cleaning` from the custody ledger.
 */
import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { createConnection } from 'mysql2/promise'
import { parseConnectionUrl } from '../../src/db/core/connection.js'
import { MYSQL_URL } from '../../test/support/db.js'

const TICKS_PER_SECOND = 100

/** A process's parent pid, utime + stime (ticks) and RSS (kB), or null when it is gone. */
function stat(pid: number): { ppid: number; ticks: number; rssKb: number } | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const rss = /VmRSS:\s+(\d+)/.exec(status)
    return {
      ppid: Number(fields[1]),
      ticks: Number(fields[11]) + Number(fields[12]),
      rssKb: rss ? Number(rss[1]) : 0,
    }
  } catch {
    return null
  }
}

/** `pid` and every process below it. */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>()
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const s = stat(Number(name))
    if (s) children.set(s.ppid, [...(children.get(s.ppid) ?? []), Number(name)])
  }
  const out: number[] = []
  const walk = (p: number) => {
    out.push(p)
    for (const c of children.get(p) ?? []) walk(c)
  }
  walk(pid)
  return out
}

export interface ProcessSample {
  cpuMs: number
  /** RSS of each process of the tree (the first is the one started), MB. */
  rssMb: number[]
}

/** CPU ms used so far by the tree of `pid`, and each member's RSS now. */
export function sampleProcess(pid: number): ProcessSample {
  const tree = processTree(pid).map(stat)
  return {
    cpuMs: tree.reduce((a, s) => a + (s ? (s.ticks * 1000) / TICKS_PER_SECOND : 0), 0),
    rssMb: tree.filter((s) => s !== null).map((s) => Math.round(s.rssKb / 102.4) / 10),
  }
}

/** Pids of the machine's processes whose command line matches (MariaDB, RabbitMQ, Placement). */
export function pidsOf(pattern: RegExp): number[] {
  return readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .filter((n) => {
      try {
        return pattern.test(readFileSync(`/proc/${n}/cmdline`, 'utf8'))
      } catch {
        return false
      }
    })
    .map(Number)
}

/** The MariaDB counters of a cycle's statements and commits. */
export const STATUS_NAMES = [
  'Com_select',
  'Com_insert',
  'Com_update',
  'Com_delete',
  'Com_commit',
  'Handler_commit',
  'Questions',
] as const

export type DbStatus = Record<(typeof STATUS_NAMES)[number], number>

async function admin() {
  const p = parseConnectionUrl(MYSQL_URL)
  return createConnection({ host: p.host, port: p.port, user: p.user, password: p.password })
}

/** MariaDB's server-wide counters now (other clients of the same server count too). */
export async function dbStatus(): Promise<DbStatus> {
  const conn = await admin()
  try {
    const [rows] = await conn.query(
      `SHOW GLOBAL STATUS WHERE Variable_name IN (${STATUS_NAMES.map(() => '?').join(',')})`,
      [...STATUS_NAMES],
    )
    const out = Object.fromEntries(STATUS_NAMES.map((n) => [n, 0])) as DbStatus
    for (const r of rows as { Variable_name: string; Value: string }[])
      out[r.Variable_name as keyof DbStatus] = Number(r.Value)
    return out
  } finally {
    await conn.end()
  }
}

/** `after - before`, per cycle (rounded to 0.01). */
export function perCycle(before: DbStatus, after: DbStatus, cycles: number) {
  return Object.fromEntries(
    STATUS_NAMES.map((n) => [
      n,
      cycles ? Math.round(((after[n] - before[n]) / cycles) * 100) / 100 : null,
    ]),
  )
}

/**
 * A fresh, empty MariaDB database (the code under test migrates it) with one user per role (api,
 * conductor, …) that only that role's processes use, so that each one's statements can be told
 * apart and from other clients' (`userStatus`; turns on MariaDB's `userstat`); drop() removes all.
 */
export async function freshMariaDb(
  name: string,
  roles: readonly string[],
): Promise<{ url(role: string): string; users: Record<string, string>; drop(): Promise<void> }> {
  const conn = await admin()
  const password = randomBytes(9).toString('hex')
  const users = Object.fromEntries(roles.map((r) => [r, `${name}_${r.slice(0, 4)}`]))
  const hosts = ['127.0.0.1', 'localhost']
  await conn.query(`CREATE DATABASE ${name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`)
  for (const user of Object.values(users))
    for (const host of hosts) {
      await conn.query(`CREATE USER '${user}'@'${host}' IDENTIFIED BY '${password}'`)
      await conn.query(`GRANT ALL ON ${name}.* TO '${user}'@'${host}'`)
    }
  await conn.query('SET GLOBAL userstat = 1')
  await conn.end()
  const p = parseConnectionUrl(MYSQL_URL)
  return {
    url: (role) => `mysql://${users[role]}:${password}@${p.host}:${p.port}/${name}`,
    users,
    async drop() {
      const c = await admin()
      await c.query(`DROP DATABASE IF EXISTS ${name}`)
      for (const user of Object.values(users))
        for (const host of hosts) await c.query(`DROP USER IF EXISTS '${user}'@'${host}'`)
      await c.end()
    },
  }
}

/** The counters of MariaDB's USER_STATISTICS kept for a cycle. */
const USER_COLUMNS = {
  SELECT_COMMANDS: 'selects',
  UPDATE_COMMANDS: 'writes',
  OTHER_COMMANDS: 'other',
  COMMIT_TRANSACTIONS: 'commits',
  ROLLBACK_TRANSACTIONS: 'rollbacks',
  ROWS_READ: 'rowsRead',
  BUSY_TIME: 'busyMs',
  CPU_TIME: 'cpuMs',
} as const

export type UserStatus = Record<(typeof USER_COLUMNS)[keyof typeof USER_COLUMNS], number>

/** One MariaDB user's counters now (statements of this benchmark's processes only); times in ms. */
export async function userStatus(user: string): Promise<UserStatus> {
  const conn = await admin()
  try {
    const [rows] = await conn.query(
      'SELECT * FROM information_schema.USER_STATISTICS WHERE USER = ?',
      [user],
    )
    const row = (rows as Record<string, unknown>[])[0] ?? {}
    return Object.fromEntries(
      Object.entries(USER_COLUMNS).map(([col, key]) => [
        key,
        Number(row[col] ?? 0) * (key.endsWith('Ms') ? 1000 : 1),
      ]),
    ) as UserStatus
  } finally {
    await conn.end()
  }
}

/** `after - before` of a user's counters, per cycle. */
export function userPerCycle(before: UserStatus, after: UserStatus, cycles: number) {
  return Object.fromEntries(
    Object.keys(before).map((k) => {
      const key = k as keyof UserStatus
      return [key, cycles ? Math.round(((after[key] - before[key]) / cycles) * 100) / 100 : null]
    }),
  )
}

/** Rows read and changed per table of `database` so far (MariaDB's TABLE_STATISTICS, userstat). */
export async function tableRows(database: string): Promise<Record<string, [number, number]>> {
  const conn = await admin()
  try {
    const [rows] = await conn.query(
      'SELECT TABLE_NAME AS t, ROWS_READ AS r, ROWS_CHANGED AS c FROM information_schema.TABLE_STATISTICS WHERE TABLE_SCHEMA = ?',
      [database],
    )
    return Object.fromEntries(
      (rows as { t: string; r: number; c: number }[]).map((x) => [x.t, [Number(x.r), Number(x.c)]]),
    )
  } finally {
    await conn.end()
  }
}

/** Per table, rows read and changed per cycle between two `tableRows`, the busiest first. */
export function tableRowsPerCycle(
  a: Record<string, [number, number]>,
  b: Record<string, [number, number]>,
  cycles: number,
) {
  const r = (x: number) => Math.round((x / cycles) * 100) / 100
  return Object.fromEntries(
    Object.entries(b)
      .map(([t, [read, changed]]) => {
        const [read0, changed0] = a[t] ?? [0, 0]
        return [t, { read: r(read - read0), changed: r(changed - changed0) }] as const
      })
      .filter(([, v]) => v.read > 0 || v.changed > 0)
      .sort((x, y) => y[1].changed + y[1].read - (x[1].changed + x[1].read)),
  )
}

const pct = (xs: number[], q: number) =>
  xs.length ? xs[Math.min(xs.length - 1, Math.ceil(q * xs.length) - 1)]! : null

/** Time in `cleaning` of the releases since `sinceMs` (custody ledger: released_at → cleaned_at). */
export async function timeInCleaning(database: string, sinceMs: number) {
  const conn = await admin()
  try {
    const [rows] = await conn.query(
      `SELECT a.released_at AS released, k.cleaned_at AS cleaned
         FROM ${database}.custody_records a
         JOIN ${database}.custody_records k ON k.allocation_uuid = a.uuid
        WHERE a.kind = 'allocation' AND k.kind = 'clean'`,
    )
    const ms = (rows as { released: unknown; cleaned: unknown }[])
      .map((r) => [new Date(String(r.released)).getTime(), new Date(String(r.cleaned)).getTime()])
      .filter(([released]) => released! >= sinceMs)
      .map(([released, cleaned]) => cleaned! - released!)
      .sort((a, b) => a - b)
    const [left] = await conn.query(
      `SELECT COUNT(*) AS n FROM ${database}.attach_handles WHERE clean_state IS NOT NULL`,
    )
    return {
      releases: ms.length,
      p50Ms: pct(ms, 0.5),
      p99Ms: pct(ms, 0.99),
      maxMs: pct(ms, 1),
      leftCleaning: Number((left as { n: number }[])[0]?.n ?? 0),
    }
  } catch (err) {
    return { notMeasured: (err as Error).message }
  } finally {
    await conn.end()
  }
}
