/**
 * High availability (issue 30): bind cycles (test/support/bind-cycles.ts: create, bind, poll resolved,
 * delete by instance) from 8 and 64 clients in flight against 2 `cyborg api` and 2 `cyborg conductor`
 * (test/support/ha-cluster.ts), once on a 3-node Galera cluster (each process lists the nodes from a
 * different one: the two conductors write through different nodes) and once on one MariaDB (the
 * machine's 3306, a fresh database), both on the same 3-node RabbitMQ cluster with quorum queues.
 * Then, on Galera, the faults of test/support/ha-faults.ts under 8 in flight, each with its write
 * stall. Prints one JSON document: cycles/s per level and shape, the ratio (goal ≥ 0.7), handles
 * seen held twice (goal 0), group-commit retries (`cyborg_db_write_retries_total` of the conductors:
 * certification failures count as `deadlock`), the CPU time of the database servers and of the
 * Cyborg processes per cycle (/proc), and each fault's stall against its goal.
 * Usage: npm run bench:cluster [-- --seconds 4 --levels 8,64 --no-faults --keep-dir --rpc-timeout 30 --bind-timeout 60]
 */
import { readFileSync, readdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { stormProviders } from '../test/support/arq-storm.js'
import { startCycles } from '../test/support/bind-cycles.js'
import {
  startClusters,
  startHa,
  type Clusters,
  type HaDeployment,
} from '../test/support/ha-cluster.js'
import { runFaults } from '../test/support/ha-faults.js'
import { cpuSeconds } from './support/load.js'

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '4' },
    levels: { type: 'string', default: '8,64' },
    'no-faults': { type: 'boolean', default: false },
    // Keeps the clusters' directory (Galera's error.log names each certification conflict).
    'keep-dir': { type: 'boolean', default: false },
    // The shipped defaults: with 64 in flight on a loaded 2-core machine a cycle's RPC may take over 5 s.
    'rpc-timeout': { type: 'string', default: '30' },
    'bind-timeout': { type: 'string', default: '60' },
  },
})
const seconds = Number(values.seconds)
const levels = values.levels.split(',').map(Number)
const BIND_TIMEOUT_S = Number(values['bind-timeout'])
const RPC_TIMEOUT_S = Number(values['rpc-timeout'])
/** Goals of issue 30 (ms): the conductor's is its bind timeout, the window after which a dead conductor's claims are reaped. */
const GOALS: Record<string, number> = {
  'galera node kill': 10_000,
  'rabbitmq node stop': 5_000,
  'conductor kill': BIND_TIMEOUT_S * 1000,
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')

/** The machine's own mariadbd (3306): every mariadbd not started from a --defaults-file of ours. */
function machineMariadbPids(): number[] {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0')
      if (
        /mariadbd|mysqld/.test(cmd[0] ?? '') &&
        !cmd.some((a) => a.startsWith('--defaults-file=/tmp'))
      )
        pids.push(Number(entry))
    } catch {
      // gone meanwhile
    }
  }
  return pids
}

const cpuOf = (pids: number[]) => pids.reduce((sum, p) => sum + (cpuSeconds(p) ?? 0), 0)

/** Sum of `cyborg_db_write_retries_total` over the running conductors' /metrics, by cause. */
async function retries(d: HaDeployment): Promise<Record<string, number>> {
  const out: Record<string, number> = {}
  for (const [i, c] of d.conductors.entries()) {
    if (!c || c.child.exitCode !== null) continue
    const text = await (await fetch(d.metricsUrl(i))).text().catch(() => '')
    for (const m of text.matchAll(/^cyborg_db_write_retries_total\{cause="(\w+)"\} (\d+)/gm))
      out[m[1]!] = (out[m[1]!] ?? 0) + Number(m[2])
  }
  return out
}
const diff = (a: Record<string, number>, b: Record<string, number>) =>
  Object.fromEntries(Object.entries(a).map(([k, v]) => [k, v - (b[k] ?? 0)]))

async function levelRun(
  clusters: Clusters,
  d: HaDeployment,
  shape: string,
  level: number,
  providers: string[],
) {
  const dbPids = shape === 'galera' ? clusters.galeraPids() : machineMariadbPids()
  const cyborgPids = [...d.conductors.map((c) => c?.child.pid ?? 0), ...d.apiPids]
  const before = { db: cpuOf(dbPids), cyborg: cpuOf(cyborgPids), retries: await retries(d) }
  const prefix = `${shape === 'galera' ? 'ca' : 'c5'}${String(level).padStart(6, '0')}`
  const load = startCycles(d.apiUrls, providers, level, prefix)
  const t0 = performance.now()
  await sleep(seconds * 1000)
  await load.stop()
  const wall = (performance.now() - t0) / 1000
  const cycles = load.cycles()
  const dbCpu = cpuOf(dbPids) - before.db
  const cyborgCpu = cpuOf(cyborgPids) - before.cyborg
  return {
    level,
    cycles,
    cyclesPerSecond: Math.round((cycles / wall) * 10) / 10,
    errors: load.errors,
    samples: load.samples,
    doubleHeld: load.doubleHeld(),
    retries: diff(await retries(d), before.retries),
    databaseCpuMsPerCycle: cycles ? Math.round((dbCpu * 1000) / cycles) / 1 : null,
    cyborgCpuMsPerCycle: cycles ? Math.round((cyborgCpu * 1000) / cycles) : null,
    databaseCpuShareOfWall: Math.round((dbCpu / wall) * 100) / 100,
  }
}

const dir = mkdtempSync(join(tmpdir(), 'cyborg-bench-cluster-'))
const out: Record<string, unknown> = {
  loadavgStart: loadavg(),
  seconds,
  levels,
  bindTimeoutS: BIND_TIMEOUT_S,
  rpcTimeoutS: RPC_TIMEOUT_S,
}
const clusters = await startClusters(dir)
try {
  const rows: Record<string, Awaited<ReturnType<typeof levelRun>>[]> = {}
  for (const shape of ['single', 'galera'] as const) {
    const d = await startHa(clusters, {
      database: shape,
      name: 'cyborg_bench_cluster',
      bindTimeoutS: BIND_TIMEOUT_S,
      rpcTimeoutS: RPC_TIMEOUT_S,
    })
    try {
      const providers = await stormProviders(d.apiUrls[0]!)
      rows[shape] = []
      for (const level of levels) {
        rows[shape].push(await levelRun(clusters, d, shape, level, providers))
        process.stderr.write(`${shape} ${level}: ${JSON.stringify(rows[shape].at(-1))}\n`)
      }
      if (shape === 'galera' && !values['no-faults']) {
        const load = startCycles(d.apiUrls, providers, 8, 'cf000000')
        const stalls = await runFaults(clusters, d, load, 4000, (l) =>
          process.stderr.write(`${l}\n`),
        )
        await load.stop()
        out.faults = stalls.map((s) => ({
          ...s,
          goalMs: GOALS[s.fault],
          met: s.stallMs < GOALS[s.fault]!,
        }))
        out.faultLoad = {
          cycles: load.cycles(),
          errors: load.errors,
          samples: load.samples,
          doubleHeld: load.doubleHeld(),
          // What the processes logged as errors besides the 503s of RPC timeouts (a 500 is a bug).
          otherErrors: d
            .errorLines()
            .filter((l) => !/"status":503/.test(l))
            .map((l) => l.slice(0, 1500)),
        }
      }
    } finally {
      await d.stop()
    }
  }
  out.single = rows.single
  out.galera = rows.galera
  out.ratio = Object.fromEntries(
    levels.map((l, i) => [
      l,
      Math.round(
        ((rows.galera![i]!.cyclesPerSecond || 0) / (rows.single![i]!.cyclesPerSecond || 1)) * 100,
      ) / 100,
    ]),
  )
  out.doubleHeld = [...rows.single!, ...rows.galera!].reduce((n, r) => n + r.doubleHeld, 0)
  out.loadavgEnd = loadavg()
  console.log(JSON.stringify(out, null, 2))
} finally {
  await clusters.down()
  if (values['keep-dir']) console.error(`kept ${dir} (the nodes' logs)`)
  else rmSync(dir, { recursive: true, force: true })
}
