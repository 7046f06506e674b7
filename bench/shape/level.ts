/**
 * One measured load of bind cycles (bench/storm/boot-storm-client.ts: GET the profile, POST an ARQ,
 * PATCH bind, poll until resolved, DELETE by instance) at one level of binds in flight, against
 * any target whose processes are known: per cycle, each process's CPU ms (/proc, a process with its
 * children), MariaDB's statements and commits (`SHOW GLOBAL STATUS` deltas, server-wide), Placement
 * calls; and each process's event-loop lag (its /metrics) and RSS at the end.
 */
import { scrapeEventLoopLag, type LagFigures } from '../support/load.js'
import { storm } from '../storm/boot-storm-client.js'
import { monotonicUs, type Window } from './profile-summary.js'
import {
  dbStatus,
  perCycle,
  pidsOf,
  sampleProcess,
  tableRows,
  tableRowsPerCycle,
  timeInCleaning,
  userPerCycle,
  userStatus,
  type DbStatus,
  type UserStatus,
} from './measure.js'

export interface Target {
  url: string
  rps: string[]
  /** The target's own processes, by role. */
  pids: Record<string, number>
  /** /metrics URLs by role, where a process serves one. */
  metrics: Record<string, string | undefined>
  /** Placement calls since the last call, where counted. */
  placementCalls?: () => Record<string, number>
  /** The MariaDB database holding its custody ledger, where it has one. */
  database?: string
  /** The database is MariaDB (statements are counted). */
  mariadb: boolean
  /** The MariaDB user of each of its processes (their own statements, apart from other clients'). */
  dbUsers?: Record<string, string>
  /** The Placement this target calls (its uwsgi processes' CPU is counted). */
  placementUrl?: string
}

/** Services the cycles load too: MariaDB and RabbitMQ serve anything else on the machine too. */
const shared = (placementUrl = 'none') => ({
  mariadb: /mariadbd|mysqld/,
  rabbitmq: /beam\.smp/,
  placement: new RegExp(`uwsgi.*http-socket.${new URL(placementUrl, 'http://x').host}`),
})

const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d

function sampleAll(pids: Record<string, number>) {
  return Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, sampleProcess(pid)]))
}

/** The shared services' pids now (a short-lived rabbitmqctl's beam.smp may come and go). */
function sharedPids(placementUrl: string | undefined): Record<string, number[]> {
  return Object.fromEntries(Object.entries(shared(placementUrl)).map(([k, re]) => [k, pidsOf(re)]))
}

function sharedCpuMs(pids: Record<string, number[]>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(pids).map(([k, list]) => [
      k,
      list.reduce((a, pid) => a + sampleProcess(pid).cpuMs, 0),
    ]),
  )
}

async function lagWindow(metrics: Target['metrics']) {
  const entries = Object.entries(metrics).filter((e): e is [string, string] => Boolean(e[1]))
  const out: Record<string, LagFigures | null> = {}
  await Promise.all(entries.map(async ([k, u]) => (out[k] = await scrapeEventLoopLag(u))))
  return out
}

async function usersStatus(users: Record<string, string> | undefined) {
  if (!users) return null
  const out: Record<string, UserStatus> = {}
  for (const [role, user] of Object.entries(users)) out[role] = await userStatus(user)
  return out
}

/** Per role and in total: the statements, commits and MariaDB time of each process, per cycle. */
function usersPerCycle(a: Record<string, UserStatus>, b: Record<string, UserStatus>, n: number) {
  const total = (x: Record<string, UserStatus>) => {
    const out = { ...Object.values(x)[0]! }
    for (const k of Object.keys(out) as (keyof UserStatus)[])
      out[k] = Object.values(x).reduce((acc, s) => acc + s[k], 0)
    return out
  }
  return {
    ...Object.fromEntries(Object.keys(a).map((r) => [r, userPerCycle(a[r]!, b[r]!, n)])),
    total: userPerCycle(total(a), total(b), n),
  }
}

/** Waits (up to 5 s) until no unit is left cleaning, then reads time in cleaning since `since`. */
async function cleaningSince(database: string, since: number) {
  const deadline = Date.now() + 5000
  for (;;) {
    const t = await timeInCleaning(database, since)
    if (!('leftCleaning' in t) || t.leftCleaning === 0 || Date.now() > deadline) return t
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** Each process's CPU ms per second with no load (timers, heartbeats, polls), over `ms`. */
async function idleCpu(pids: Record<string, number>, ms = 1000) {
  const a = sampleAll(pids)
  await new Promise((r) => setTimeout(r, ms))
  const b = sampleAll(pids)
  return Object.fromEntries(
    Object.keys(pids).map((k) => [k, round(((b[k]!.cpuMs - a[k]!.cpuMs) * 1000) / ms, 1)]),
  )
}

export async function measureLevel(target: Target, level: number, seconds: number) {
  const idle0 = await usersStatus(target.dbUsers)
  const idleCpuMsPerSecond = await idleCpu(target.pids)
  const idle1 = await usersStatus(target.dbUsers)
  target.placementCalls?.()
  await lagWindow(target.metrics) // starts each process's next lag window
  const since = Date.now()
  const cpu0 = sampleAll(target.pids)
  const sharedNow = sharedPids(target.placementUrl)
  const shared0 = sharedCpuMs(sharedNow)
  const db0: DbStatus | null = target.mariadb ? await dbStatus() : null
  const user0 = await usersStatus(target.dbUsers)
  const tables0 = target.database && target.dbUsers ? await tableRows(target.database) : null
  const from = monotonicUs()
  const result = await storm(target.url, level, target.rps, seconds)
  const window: Window = [from, monotonicUs()]
  const db1 = target.mariadb ? await dbStatus() : null
  const user1 = await usersStatus(target.dbUsers)
  const tables1 = target.database && target.dbUsers ? await tableRows(target.database) : null
  const shared1 = sharedCpuMs(sharedNow)
  const cpu1 = sampleAll(target.pids)
  const lag = await lagWindow(target.metrics)
  const calls = target.placementCalls?.()
  const n = result.cycles
  const perProcess = Object.fromEntries(
    Object.keys(target.pids).map((k) => [
      k,
      n ? round((cpu1[k]!.cpuMs - cpu0[k]!.cpuMs) / n) : null,
    ]),
  )
  const cyborgCpu = Object.values(perProcess).reduce<number>((a, x) => a + (x ?? 0), 0)
  const bindFailed = Object.entries(result.errors)
    .filter(([k]) => k.includes('BindFailed'))
    .reduce((a, [, v]) => a + v, 0)
  const placementTotal = calls ? Object.values(calls).reduce((a, b) => a + b, 0) : null
  return {
    inFlight: level,
    cycles: n,
    /** The load's span on V8's profile clock (shape/profile-summary.ts). */
    window,
    cyclesPerSecond: result.cyclesPerSecond,
    cycleMs: result.ms.cycle,
    stepMs: result.ms,
    bindFailed,
    errors: result.errors,
    doubleAllocations: result.doubleAllocations,
    cpuMsPerCycle: { ...perProcess, cyborgTotal: round(cyborgCpu) },
    idleCpuMsPerSecond,
    /** Statements with no load, per second (≈ 1 s): the processes' own timers and polls. */
    idleDbPerSecond: idle0 && idle1 ? usersPerCycle(idle0, idle1, 1) : null,
    sharedServicesCpuMsPerCycle: Object.fromEntries(
      Object.keys(shared()).map((k) => [k, n ? round((shared1[k]! - shared0[k]!) / n) : null]),
    ),
    dbPerCycle: db0 && db1 ? perCycle(db0, db1, n) : null,
    dbUserPerCycle: user0 && user1 ? usersPerCycle(user0, user1, n) : null,
    /** Rows read and changed per table per cycle (which tables a cycle touches). */
    tableRowsPerCycle: tables0 && tables1 && n ? tableRowsPerCycle(tables0, tables1, n) : null,
    placementCallsPerCycle: placementTotal === null || !n ? null : round(placementTotal / n),
    placementCalls: calls ?? null,
    timeInCleaning: target.database ? await cleaningSince(target.database, since) : null,
    eventLoopLag: lag,
    rssMb: Object.fromEntries(Object.entries(cpu1).map(([k, s]) => [k, s.rssMb])),
  }
}

export type LevelFigures = Awaited<ReturnType<typeof measureLevel>>
