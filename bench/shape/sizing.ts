/**
 * The cost model's arithmetic (bench/cost-model.ts, docs/scaling.md): per-unit figures (a bind
 * cycle, an unchanged or changed period report, a lease heartbeat, a telemetry message) times the
 * rates a fleet makes give each role's CPU, the database's statements and commits per second and the
 * broker's messages per second; then the processes that keep every one under its utilisation goal.
 * Telemetry is a fanout: every conductor (and the API) takes every message, so its cost does not
 * divide over conductors.
 */
import type { Figures } from './around.js'

export interface Assumptions {
  hosts: number
  /** `[DEFAULT] periodic_interval`: one period report and one telemetry message per host. */
  periodicIntervalS: number
  /** `[agent] report_interval`: one lease heartbeat per host. */
  reportIntervalS: number
  /** Share of period reports that carry a changed inventory. */
  changedShare: number
  bootVms: number
  bootSeconds: number
  /** A process's CPU kept under this share of one core (headroom for bursts and GC). */
  utilisation: number
  /** A core of the target machine against one of the measuring machine (1 = the same). */
  coreSpeed: number
}

export const DEFAULTS: Assumptions = {
  hosts: 10_000,
  periodicIntervalS: 60,
  reportIntervalS: 10,
  changedShare: 0.01,
  bootVms: 1000,
  bootSeconds: 60,
  utilisation: 0.5,
  coreSpeed: 1,
}

export type Units = Record<'bind' | 'unchanged' | 'changed' | 'heartbeat' | 'telemetry', Figures>

const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d

/** Statements (selects, writes, other) and InnoDB commits per unit, over the shape's MariaDB users. */
export function dbPerUnit(f: Figures) {
  let statements = 0
  let commits = 0
  for (const row of Object.values(f.dbShapeUsers)) {
    statements += (row.selects ?? 0) + (row.writes ?? 0) + (row.other ?? 0)
    commits += row.commits ?? 0
  }
  return { statements: round(statements, 3), commits: round(commits, 3) }
}

/** The conductors' CPU per unit (conductor, conductor2, …), summed. */
export const conductorMs = (f: Figures) =>
  Object.entries(f.cpuMs)
    .filter(([k]) => /^conductor\d*$/.test(k))
    .reduce((acc, [, v]) => acc + (v ?? 0), 0)

export function size(units: Units, a: Assumptions = DEFAULTS) {
  const rates = {
    bind: a.bootVms / a.bootSeconds,
    unchanged: (a.hosts * (1 - a.changedShare)) / a.periodicIntervalS,
    changed: (a.hosts * a.changedShare) / a.periodicIntervalS,
    heartbeat: a.hosts / a.reportIntervalS,
    telemetry: a.hosts / a.periodicIntervalS,
  }
  const sum = (fn: (f: Figures) => number, only?: (k: keyof Units) => boolean) =>
    (Object.keys(rates) as (keyof Units)[])
      .filter((k) => !only || only(k))
      .reduce((acc, k) => acc + rates[k] * fn(units[k]), 0)
  const budget = 1000 * a.utilisation * a.coreSpeed
  const shared = (k: keyof Units) => k !== 'telemetry'
  /**
   * A role's processes: the work they share, divided over them, plus the telemetry each one takes
   * in full (the measured total over the processes of that role that each took it all).
   */
  const role = (cpu: (f: Figures) => number, measured: number) => {
    const perProcess = (rates.telemetry * cpu(units.telemetry)) / measured
    const sharedMs = sum(cpu, shared)
    const n = perProcess >= budget ? null : Math.max(1, Math.ceil(sharedMs / (budget - perProcess)))
    return { sharedMs, perProcess, n }
  }
  const measured = Object.keys(units.telemetry.cpuMs).filter((k) => /^conductor\d*$/.test(k))
  const conductors = role(conductorMs, measured.length)
  const api = role((f) => f.cpuMs.api ?? 0, 1)
  const db = {
    statements: sum((f) => dbPerUnit(f).statements),
    commits: sum((f) => dbPerUnit(f).commits),
  }
  return {
    assumptions: a,
    ratesPerSecond: Object.fromEntries(Object.entries(rates).map(([k, v]) => [k, round(v)])),
    cpuMsPerSecond: {
      conductorsShared: round(conductors.sharedMs),
      telemetryPerConductor: round(conductors.perProcess),
      apiShared: round(api.sharedMs),
      telemetryPerApi: round(api.perProcess),
      mariadb: round(sum((f) => f.cpuMs.mariadb ?? 0)),
      rabbitmq: round(sum((f) => f.cpuMs.rabbitmq ?? 0)),
      placement: round(sum((f) => f.cpuMs.placement ?? 0)),
    },
    /** Processes of each role that keep each one under `utilisation` of a core (null: none can). */
    processes: { conductors: conductors.n, api: api.n },
    database: { statementsPerSecond: round(db.statements), commitsPerSecond: round(db.commits) },
    broker: {
      publishedPerSecond: round(sum((f) => f.bus.published)),
      deliveredPerSecond: round(sum((f) => f.bus.delivered)),
    },
    placementCallsPerSecond: round(sum((f) => f.placementCalls ?? 0)),
  }
}
