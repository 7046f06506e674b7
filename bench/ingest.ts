/**
 * Inventory ingestion at fleet scale: simulated agents report full snapshots over RabbitMQ to ONE
 * conductor (bench/ingest/ingest-conductor.ts, a child process, so its CPU is measured alone) on a fresh
 * PostgreSQL database. Time-compressed: one `--period-s` period plays in period-s / compress
 * seconds. Period 1 is every host's first report (all changed); in later periods a fraction of
 * the hosts (`--changed`, default 1 %) changes one device. Prints one JSON document.
 * Usage: node --import tsx bench/ingest.ts [--hosts 10000] [--devices 8] [--period-s 60]
 *   [--compress 10] [--duration-s 180] [--changed 0.01] [--in-flight 256] [--max-batch 64] [--save-interval-ms 10]
 */
import { fork, type ChildProcess } from 'node:child_process'
import { cpus } from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { ROOT } from '../test/support/service.js'
import { testDialects } from '../test/support/db.js'
import { testBroker } from '../test/support/peers/rabbitmq.js'
import { createRabbitMqBus } from '../src/bus/rabbitmq-bus.js'
import { createConductorClient } from '../src/rpc/conductor-rpc.js'
import { changedHosts, hostSnapshot, playPeriod } from './ingest/ingest-hosts.js'
import { eventLoopLag } from './support/load.js'

const opt = (d: string) => ({ type: 'string' as const, default: d })
const { values } = parseArgs({
  options: {
    hosts: opt('10000'),
    devices: opt('8'),
    'period-s': opt('60'),
    compress: opt('10'),
    'duration-s': opt('180'),
    changed: opt('0.01'),
    'in-flight': opt('256'),
    'max-batch': opt('64'),
    'save-interval-ms': opt('10'),
    'pool-size': opt('10'),
  },
})
const n = (k: keyof typeof values) => Number(values[k])
const settings = {
  hosts: n('hosts'),
  devices: n('devices'),
  periodSeconds: n('period-s'),
  compress: n('compress'),
  durationSeconds: n('duration-s'),
  changedFraction: n('changed'),
  inFlight: n('in-flight'),
  maxBatch: n('max-batch'),
  saveIntervalMs: n('save-interval-ms'),
  poolSize: n('pool-size'),
}
const periods = Math.max(1, Math.round(settings.durationSeconds / settings.periodSeconds))
const periodMs = (settings.periodSeconds * 1000) / settings.compress
const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d

type Stats = {
  cpu: NodeJS.CpuUsage
  statements: Record<
    'outsideTransaction' | 'inTransaction',
    { total: number; byVerb: Record<string, number> }
  >
  batches: number
  ops: number
  rssMb: number
}
const ask = (child: ChildProcess) =>
  new Promise<Stats>((resolve) => {
    child.once('message', (m) => resolve(m as Stats))
    child.send('stats')
  })

const [broker, dialects] = await Promise.all([testBroker(), testDialects()])
const postgres = dialects.find((d) => d.name === 'postgres')!
if (broker.skip || postgres.skip) throw new Error(`cannot run: ${broker.skip ?? postgres.skip}`)
const vhost = await broker.createVhost()
const database = await postgres.create()
const child = fork(
  path.join(ROOT, 'bench/ingest/ingest-conductor.ts'),
  [
    database.url,
    vhost.url,
    String(settings.saveIntervalMs),
    String(settings.maxBatch),
    String(settings.poolSize),
  ],
  { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
)
const agentsBus = await createRabbitMqBus({
  url: vhost.url,
  connectionName: 'cyborg-bench-agents',
  defaultTimeoutMs: 600_000,
})
const lag = eventLoopLag()
try {
  await new Promise((resolve, reject) => {
    child.once('message', resolve)
    child.once('exit', (code) => reject(new Error(`conductor exited with ${code}`)))
  })
  const client = createConductorClient(agentsBus, { timeoutMs: 600_000 })
  const snapshots = Array.from({ length: settings.hosts }, (_, i) =>
    hostSnapshot(i, settings.devices),
  )
  const rows: Record<string, unknown>[] = []
  const accepted = new Map<string, string>()
  for (let p = 0; p < periods; p++) {
    if (p > 0)
      for (const i of changedHosts(settings.hosts, settings.changedFraction, p))
        snapshots[i] = hostSnapshot(i, settings.devices, p)
    const before = await ask(child)
    const outcome = await playPeriod(client, snapshots, {
      periodMs,
      inFlight: settings.inFlight,
      accepted,
    })
    const after = await ask(child)
    const cpuMs = (after.cpu.user + after.cpu.system - before.cpu.user - before.cpu.system) / 1000
    const delta = (k: 'outsideTransaction' | 'inTransaction') =>
      after.statements[k].total - before.statements[k].total
    const byVerb = (k: 'outsideTransaction' | 'inTransaction') =>
      Object.fromEntries(
        Object.entries(after.statements[k].byVerb)
          .map(([v, c]) => [v, c - (before.statements[k].byVerb[v] ?? 0)])
          .filter(([, c]) => c !== 0),
      )
    const outside = delta('outsideTransaction')
    const inside = delta('inTransaction')
    const cpuMsPerReport = cpuMs / outcome.reports
    rows.push({
      period: p + 1,
      kind:
        p === 0
          ? 'first reports (all new)'
          : `steady (${settings.changedFraction * 100} % changed)`,
      ...outcome,
      reportsPerSec: Math.round(outcome.reports / outcome.wallSeconds),
      keptPace: outcome.wallSeconds <= (periodMs / 1000) * 1.05,
      conductorCpuPercent: round((cpuMs / (outcome.wallSeconds * 1000)) * 100, 1),
      conductorCpuMsPerReport: round(cpuMsPerReport, 3),
      // The goal's load at real time: 10,000 reports per 60 s.
      projectedCpuPercentAt10kHostsPer60s: round(((cpuMsPerReport * 10_000) / 60_000) * 100, 1),
      transactions: after.batches - before.batches,
      statements: {
        outsideTransaction: byVerb('outsideTransaction'),
        inTransaction: byVerb('inTransaction'),
      },
      // Every host heartbeats once a period: an unchanged host's inventory check is part of that
      // heartbeat's UPDATE (… AND report_hash = ?), so its report adds no statement of its own.
      statementsPerHostPeriod: round((outside + inside) / outcome.reports, 2),
      conductorRssMb: after.rssMb,
    })
  }
  const steady = rows.slice(1)
  const worstSteady = steady.reduce<Record<string, unknown> | undefined>(
    (w, r) =>
      w === undefined ||
      (r.projectedCpuPercentAt10kHostsPer60s as number) >
        (w.projectedCpuPercentAt10kHostsPer60s as number)
        ? r
        : w,
    undefined,
  )
  const projected = worstSteady?.projectedCpuPercentAt10kHostsPer60s as number | undefined
  process.stdout.write(
    `${JSON.stringify(
      {
        benchmark: 'ingest',
        eventLoopLag: {
          benchmarkProcess: lag(),
          conductor: 'the conductor runs in a forked child that serves no /metrics: not measured',
        },
        date: new Date().toISOString(),
        machine: {
          cpus: cpus().length,
          node: process.version,
          note: 'PostgreSQL, RabbitMQ, the conductor and the simulated agents share the machine',
        },
        settings: {
          ...settings,
          periods,
          compressedPeriodSeconds: periodMs / 1000,
          database: 'postgres (fresh database)',
          bus: 'rabbitmq (fresh vhost)',
          agents: 'one process, one AMQP connection, createConductorClient',
        },
        statementCounting:
          'pg.Client.prototype.query wrapped in the conductor process: every statement sent, ' +
          'BEGIN/COMMIT/SAVEPOINT included. Each simulated host sends what an agent sends per ' +
          'period: unchanged → one heartbeat carrying its inventory hash (no report); changed → the ' +
          'full report, then a plain heartbeat',
        placementCalls: 'see bench/ingest-placement.ts (real Placement behind a counting endpoint)',
        periods: rows,
        goal: {
          goal: '10,000 hosts per 60 s at < 25 % of one core',
          basis:
            'the worst steady period (after the first): conductor CPU per report × 10,000 ÷ 60 s, the ' +
            'CPU share at real time (uncompressed); met only when the run had ≥ 10,000 hosts',
          projectedCpuPercentOfOneCore: projected ?? null,
          met: projected === undefined ? null : projected < 25 && settings.hosts >= 10_000,
        },
      },
      null,
      2,
    )}\n`,
  )
} finally {
  if (child.connected) {
    child.send('stop')
    await new Promise((r) => child.once('exit', r))
  }
  await agentsBus.close()
  await database.close()
  await vhost.drop()
}
