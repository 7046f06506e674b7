/**
 * What one unit of work costs in the production shape (bench/cost-model.ts): around any load, each
 * process's CPU ms (/proc), the shared services' CPU ms (MariaDB, RabbitMQ, Placement), MariaDB's
 * statements (`SHOW GLOBAL STATUS` Com_* deltas, server-wide; and the shape's own users'), the
 * broker messages (each process's `cyborg_bus_messages_total` from its /metrics, and the load's own
 * bus where it has one) and Placement calls, all divided by the units the load did.
 */
import { readFileSync } from 'node:fs'
import { dbStatus, perCycle, pidsOf, sampleProcess, userPerCycle, userStatus } from './measure.js'
import type { UserStatus } from './measure.js'
import type { Target } from './level.js'

/** What one unit cost (per unit, but wallSeconds and perSecond). */
export interface Figures {
  units: number
  wallSeconds: number
  perSecond: number
  /** Each process's (api, conductor, agent, …) and shared service's (mariadb, rabbitmq, placement). */
  cpuMs: Record<string, number | null>
  dbServerWide: Record<string, number | null>
  dbShapeUsers: Record<string, Record<string, number | null>>
  bus: { published: number; delivered: number; byRole: Record<string, BusCounts> }
  placementCalls: number | null
  placementCallsByPath: Record<string, number | null>
}

const round = (x: number, d = 3) => Math.round(x * 10 ** d) / 10 ** d

/** Messages by `direction kind` (sent call, received reply, …). */
export type BusCounts = Record<string, number>

/** Sums `cyborg_bus_messages_total` of one /metrics text by `direction kind`. */
export function parseBusCounts(text: string): BusCounts {
  const out: BusCounts = {}
  const line = /^cyborg_bus_messages_total\{([^}]*)\}\s+([0-9.e+]+)/gm
  for (const m of text.matchAll(line)) {
    const direction = /direction="([^"]*)"/.exec(m[1]!)?.[1] ?? '?'
    const kind = /kind="([^"]*)"/.exec(m[1]!)?.[1] ?? '?'
    out[`${direction} ${kind}`] = (out[`${direction} ${kind}`] ?? 0) + Number(m[2])
  }
  return out
}

async function scrapeBus(metrics: Target['metrics']): Promise<Record<string, BusCounts>> {
  const entries = Object.entries(metrics).filter((e): e is [string, string] => Boolean(e[1]))
  const out: Record<string, BusCounts> = {}
  await Promise.all(
    entries.map(async ([role, url]) => {
      const res = await fetch(url)
      out[role] = parseBusCounts(await res.text())
    }),
  )
  return out
}

/** `b - a` per unit, by role and `direction kind`, with the broker's totals. */
function busPerUnit(a: Record<string, BusCounts>, b: Record<string, BusCounts>, n: number) {
  const byRole: Record<string, BusCounts> = {}
  let published = 0
  let delivered = 0
  for (const [role, counts] of Object.entries(b)) {
    const row: BusCounts = {}
    for (const [k, v] of Object.entries(counts)) {
      const d = v - (a[role]?.[k] ?? 0)
      if (d === 0) continue
      row[k] = round(d / n)
      if (k.startsWith('sent ')) published += d
      else delivered += d
    }
    if (Object.keys(row).length > 0) byRole[role] = row
  }
  /** Messages put on the broker (every publish, a reply too) and taken from it, per unit. */
  return { published: round(published / n), delivered: round(delivered / n), byRole }
}

const SHARED = (placementUrl: string) => ({
  mariadb: /mariadbd|mysqld/,
  rabbitmq: /beam\.smp/,
  placement: new RegExp(`uwsgi.*http-socket.${new URL(placementUrl).host}`),
})

/** The machine's shared servers, not a helper's private one (data dirs under /tmp). */
function sharedPids(placementUrl: string): Record<string, number[]> {
  const cmdline = (pid: number) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8')
    } catch {
      return '/tmp/'
    }
  }
  return Object.fromEntries(
    Object.entries(SHARED(placementUrl)).map(([k, re]) => [
      k,
      pidsOf(re).filter((pid) => !cmdline(pid).includes('/tmp/')),
    ]),
  )
}

/** CPU ms so far of each pid of each list. */
function cpuOf(pids: Record<string, number[]>): Record<string, number[]> {
  return Object.fromEntries(
    Object.entries(pids).map(([k, list]) => [k, list.map((pid) => sampleProcess(pid).cpuMs)]),
  )
}

/** `b - a` per list, leaving out a process gone meanwhile (its counter reads 0 at the end). */
function cpuDelta(a: Record<string, number[]>, b: Record<string, number[]>) {
  return Object.fromEntries(
    Object.keys(b).map((k) => [
      k,
      b[k]!.reduce((acc, end, i) => acc + (end >= a[k]![i]! ? end - a[k]![i]! : 0), 0),
    ]),
  )
}

async function users(target: Target): Promise<Record<string, UserStatus>> {
  const out: Record<string, UserStatus> = {}
  for (const [role, user] of Object.entries(target.dbUsers ?? {}))
    out[role] = await userStatus(user)
  return out
}

/** Each process's CPU ms per second with no load (timers, heartbeats, polls), over `ms`. */
export async function idleCpuMsPerSecond(target: Target, ms = 2000) {
  const pids = Object.fromEntries(Object.entries(target.pids).map(([k, p]) => [k, [p]]))
  const a = cpuOf(pids)
  await new Promise((r) => setTimeout(r, ms))
  const d = cpuDelta(a, cpuOf(pids))
  return Object.fromEntries(Object.keys(pids).map((k) => [k, round(d[k]! / (ms / 1000), 1)]))
}

/**
 * Runs `load` (which answers how many units it did, and its own bus's counts where it has a bus)
 * and divides what everything spent meanwhile by those units.
 */
export async function around<T extends { units: number; bus?: () => BusCounts }>(
  target: Target & { placementUrl: string },
  load: () => Promise<T>,
): Promise<Omit<T, 'bus'> & Figures> {
  const own = Object.fromEntries(Object.entries(target.pids).map(([k, p]) => [k, [p]]))
  const shared = sharedPids(target.placementUrl)
  target.placementCalls?.()
  const [bus0, db0, users0] = await Promise.all([
    scrapeBus(target.metrics),
    dbStatus(),
    users(target),
  ])
  const cpu0 = cpuOf({ ...own, ...shared })
  const started = performance.now()
  const result = await load()
  const wallSeconds = (performance.now() - started) / 1000
  const cpu1 = cpuOf({ ...own, ...shared })
  const [bus1, db1, users1] = await Promise.all([
    scrapeBus(target.metrics),
    dbStatus(),
    users(target),
  ])
  const calls = target.placementCalls?.() ?? {}
  const n = result.units
  const spent = cpuDelta(cpu0, cpu1)
  const cpu = Object.fromEntries(
    Object.keys(spent).map((k) => [k, n ? round(spent[k]! / n) : null]),
  )
  const cyborg = Object.keys(own).reduce((acc, k) => acc + (cpu[k] ?? 0), 0)
  const { bus: loadBusOf, ...rest } = result
  const loadBus = loadBusOf?.()
  const bus = busPerUnit(
    { ...bus0, ...(loadBus ? { load: {} } : {}) },
    { ...bus1, ...(loadBus ? { load: loadBus } : {}) },
    n || 1,
  )
  const userRows = Object.fromEntries(
    Object.keys(users1).map((r) => [r, userPerCycle(users0[r]!, users1[r]!, n)]),
  )
  const placement = Object.values(calls).reduce((a, b) => a + b, 0)
  return {
    ...rest,
    wallSeconds: round(wallSeconds, 2),
    perSecond: round(n / wallSeconds, 1),
    cpuMs: { ...cpu, cyborgTotal: round(cyborg) },
    /** Server-wide: other clients of the machine's MariaDB count too. */
    dbServerWide: perCycle(db0, db1, n),
    /** The shape's own MariaDB users (USER_STATISTICS): selects, writes, commits, … */
    dbShapeUsers: userRows,
    bus,
    placementCalls: n ? round(placement / n) : null,
    placementCallsByPath: Object.fromEntries(
      Object.entries(calls).map(([k, v]) => [k, n ? round(v / n) : null]),
    ),
  }
}
