/**
 * Heartbeats and leases at fleet scale (issue 15): `--agents` simulated agents beat every
 * `--interval-s` over RabbitMQ into ONE conductor on a fresh PostgreSQL database, then one lease
 * sweep fences the devices of a tenth of them. Prints one JSON document.
 *
 * The conductor runs alone in a child process (this file with `--conductor`), so its CPU time is
 * its own; it counts every statement its pg clients send (pg.Client.prototype.query wrapped, so
 * BEGIN/COMMIT/SAVEPOINT count too). It runs once per `--modes` entry on the same database: with
 * heartbeat coalescing (src/conductor/heartbeat-batch.ts, options `--batch` as JSON) and without
 * (`heartbeats: false`: each heartbeat one write of the group committer, as before). Each plays the
 * same phases: heartbeats at the fleet's rate × `--compress` (1 = the real rate, 1,000 beats/s for
 * 10,000 agents every 10 s) for `--phase-s` wall seconds, spread evenly, agent after agent, from
 * one process over `--connections` AMQP connections. One period in six of each agent carries its
 * inventory hash (a report every 60 s), which is stored: the answer must be `inventoryCurrent:
 * true`. Services rows are seeded first: the phases measure the steady state, not first sight.
 *
 * The sweep: every agent gets `--devices` devices, one agent in ten last beat an hour ago, and one
 * `sweepLeases` call (60 s leases, the conductor's committer settings) is timed; then a second.
 * Usage: node --import tsx bench/heartbeat.ts [--agents 10000] [--interval-s 10] [--compress 1,10]
 *   [--phase-s 5] [--connections 4] [--max-in-flight 4000] [--devices 4]
 *   [--modes coalesced,uncoalesced] [--batch '{"windowMs":20,"maxBatch":32}']
 */
import { fork, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { cpus, loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { sql } from 'kysely'
import pg from 'pg'
import { openDatabase, type DatabaseHandle } from '../src/db/core/connection.js'
import { createGroupCommitter } from '../src/db/core/group-commit.js'
import { createRabbitMqBus } from '../src/bus/rabbitmq-bus.js'
import { createConductor } from '../src/conductor/conductor.js'
import { sweepLeases } from '../src/conductor/lease-sweep.js'
import {
  createConductorClient,
  serveConductor,
  type ConductorRpc,
} from '../src/rpc/conductor-rpc.js'
import { noopLogger } from '../src/domain/logger.js'
import { formatTimestamp, systemClock } from '../src/domain/time.js'
import { eventLoopLag } from './support/load.js'

const AGENT = 'cyborg-agent'
const hostName = (i: number) => `hb-host-${String(i).padStart(6, '0')}`
const hashOf = (i: number) => `hash-${i}`
type Counts = { total: number; byVerb: Record<string, number> }
type Stats = { cpu: NodeJS.CpuUsage; statements: Counts }

/** The child: one conductor on the bus, counting its statements; answers 'stats', stops on 'stop'. */
async function conductorChild([dbUrl, busUrl, coalesce, batchOptions]: string[]) {
  if (!dbUrl || !busUrl || !process.send) throw new Error('fork me with <db url> <bus url> <0|1>')
  const statements: Counts = { total: 0, byVerb: {} }
  const original = pg.Client.prototype.query as (...args: unknown[]) => unknown
  pg.Client.prototype.query = function (this: object, ...args: unknown[]) {
    const config = args[0] as string | { text?: string } | undefined
    const text = typeof config === 'string' ? config : (config?.text ?? '')
    const verb = text.trimStart().split(/\s/, 1)[0]!.toLowerCase()
    statements.total++
    statements.byVerb[verb] = (statements.byVerb[verb] ?? 0) + 1
    return original.apply(this, args)
  } as typeof pg.Client.prototype.query
  const db = await openDatabase(dbUrl)
  const bus = await createRabbitMqBus({
    url: busUrl,
    log: noopLogger,
    connectionName: 'hb-conductor',
  })
  const conductor = createConductor(
    { db, log: noopLogger, clock: systemClock },
    { heartbeats: coalesce === '1' ? (JSON.parse(batchOptions ?? '{}') as object) : false },
  )
  const server = await serveConductor(bus, conductor)
  process.on('message', (msg: unknown) => {
    if (msg === 'stats') process.send!({ cpu: process.cpuUsage(), statements } satisfies Stats)
    if (msg !== 'stop') return
    void (async () => {
      await server.unsubscribe()
      await conductor.stop()
      await bus.close()
      await db.close()
      process.disconnect()
    })()
  })
  process.send({ ready: true })
}

async function main() {
  const { testDialects } = await import('../test/support/db.js')
  const { testBroker } = await import('../test/support/peers/rabbitmq.js')
  const opt = (d: string) => ({ type: 'string' as const, default: d })
  const { values } = parseArgs({
    options: {
      agents: opt('10000'),
      'interval-s': opt('10'),
      compress: opt('1,10'),
      'phase-s': opt('5'),
      connections: opt('4'),
      'max-in-flight': opt('4000'),
      devices: opt('4'),
      modes: opt('coalesced,uncoalesced'),
      batch: opt('{}'),
    },
  })
  const settings = {
    agents: Number(values.agents),
    intervalSeconds: Number(values['interval-s']),
    compress: values.compress.split(',').map(Number),
    phaseSeconds: Number(values['phase-s']),
    connections: Number(values.connections),
    maxInFlight: Number(values['max-in-flight']),
    devicesPerAgent: Number(values.devices),
    modes: values.modes.split(','),
    heartbeatBatchOptions: JSON.parse(values.batch) as object,
  }
  const realRate = settings.agents / settings.intervalSeconds
  const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d

  const [broker, dialects] = await Promise.all([testBroker(), testDialects()])
  const postgres = dialects.find((d) => d.name === 'postgres')!
  if (broker.skip || postgres.skip) throw new Error(`cannot run: ${broker.skip ?? postgres.skip}`)
  const vhost = await broker.createVhost()
  const database = await postgres.create()
  const buses = await Promise.all(
    Array.from({ length: settings.connections }, (_, i) =>
      createRabbitMqBus({ url: vhost.url, log: noopLogger, connectionName: `hb-agents-${i}` }),
    ),
  )
  const clients = buses.map((b) => createConductorClient(b, { timeoutMs: 60_000 }))
  try {
    await seedServices(database, settings.agents)
    const heartbeats: Record<string, unknown[]> = {}
    const lag = eventLoopLag()
    for (const mode of settings.modes) {
      const child = fork(
        fileURLToPath(import.meta.url),
        ['--conductor', database.url, vhost.url, mode === 'coalesced' ? '1' : '0', values.batch],
        { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
      )
      try {
        await new Promise((resolve, reject) => {
          child.once('message', resolve)
          child.once('exit', (code) => reject(new Error(`conductor exited with ${code}`)))
        })
        await play(clients, settings.agents, realRate, 1) // warm-up, not measured
        heartbeats[mode] = []
        for (const compress of settings.compress) {
          const before = await ask(child)
          const outcome = await play(
            clients,
            settings.agents,
            realRate * compress,
            settings.phaseSeconds,
            settings.maxInFlight,
          )
          const after = await ask(child)
          const cpuMs =
            (after.cpu.user + after.cpu.system - before.cpu.user - before.cpu.system) / 1000
          const statements = after.statements.total - before.statements.total
          const byVerb = Object.fromEntries(
            Object.entries(after.statements.byVerb)
              .map(([v, c]) => [v, c - (before.statements.byVerb[v] ?? 0)])
              .filter(([, c]) => c !== 0),
          )
          const cpuUsPerBeat = (cpuMs * 1000) / outcome.answered
          heartbeats[mode].push({
            compress,
            targetBeatsPerSec: realRate * compress,
            ...outcome,
            conductorCpuPercent: round((cpuMs / (outcome.wallSeconds * 1000)) * 100, 1),
            conductorCpuUsPerBeat: round(cpuUsPerBeat, 1),
            // At the fleet's real rate (agents / interval beats per second).
            projectedCpuPercentAtRealRate: round(((cpuUsPerBeat * realRate) / 1e6) * 100, 1),
            statements: { total: statements, byVerb },
            statementsPerBeat: round(statements / outcome.answered, 3),
          })
        }
      } finally {
        if (child.connected) {
          child.send('stop')
          await new Promise((r) => child.once('exit', r))
        }
      }
    }
    const sweep = await timeSweep(database.url, settings.agents, settings.devicesPerAgent)
    const real = (heartbeats.coalesced as { compress: number }[] | undefined)?.find(
      (p) => p.compress === 1,
    ) as { conductorCpuPercent: number; statementsPerBeat: number } | undefined
    process.stdout.write(
      `${JSON.stringify(
        {
          benchmark: 'heartbeat',
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
            realBeatsPerSec: realRate,
            database: 'postgres (fresh database, migrated)',
            bus: 'rabbitmq (fresh vhost)',
            agentsSimulatedBy: `one process, ${settings.connections} AMQP connections, createConductorClient`,
            statementCounting:
              'pg.Client.prototype.query wrapped in the conductor process: every statement sent',
          },
          heartbeats,
          sweep,
          goals: {
            cpuUnder25PercentAtRealRate: real ? real.conductorCpuPercent < 25 : null,
            atMost0_1StatementsPerBeatAtRealRate: real ? real.statementsPerBeat <= 0.1 : null,
            sweepUnder1s: sweep.fence.ms < 1000 && sweep.fence.correct,
          },
        },
        null,
        2,
      )}\n`,
    )
  } finally {
    for (const b of buses) await b.close()
    await database.close()
    await vhost.drop()
  }
}

const ask = (child: ChildProcess) =>
  new Promise<Stats>((resolve) => {
    child.once('message', (m) => resolve(m as Stats))
    child.send('stats')
  })

/** One services row per agent (version `bench`, its hash stored), as after a first report. */
async function seedServices(handle: DatabaseHandle, agents: number) {
  const now = formatTimestamp(new Date())
  for (let i = 0; i < agents; i += 1000) {
    const rows = Array.from({ length: Math.min(1000, agents - i) }, (_, k) => ({
      host: hostName(i + k),
      binary: AGENT,
      version: 'bench',
      report_hash: hashOf(i + k),
      last_seen: now,
      created_at: now,
      updated_at: null,
    }))
    await handle.db.insertInto('services').values(rows).execute()
  }
}

/**
 * Sends `rate × seconds` heartbeats, beat k at start + k / rate, for agent k mod agents, round
 * robin over `clients`, with at most `maxInFlight` unanswered (later ones wait: see maxLagMs).
 */
async function play(
  clients: ConductorRpc[],
  agents: number,
  rate: number,
  seconds: number,
  maxInFlight = 4000,
) {
  const total = Math.round(rate * seconds)
  const latencies = new Float64Array(total)
  let sent = 0
  let answered = 0
  let errors = 0
  let stale = 0
  let firstError: string | undefined
  let maxLagMs = 0
  let allAnswered!: () => void
  const done = new Promise<void>((r) => (allAnswered = r))
  const load1 = loadavg()[0]!
  const cpu0 = process.cpuUsage()
  const start = performance.now()
  const send = (k: number) => {
    const agent = k % agents
    const withHash = Math.floor(k / agents) % 6 === agent % 6
    const at = performance.now()
    maxLagMs = Math.max(maxLagMs, at - (start + (k / rate) * 1000))
    clients[k % clients.length]!.heartbeat({
      host: hostName(agent),
      binary: AGENT,
      version: 'bench',
      ...(withHash ? { inventoryHash: hashOf(agent) } : {}),
    })
      .then(
        (answer) => {
          if (withHash && answer?.inventoryCurrent !== true) stale++
        },
        (err: Error) => {
          errors++
          firstError ??= err.message
        },
      )
      .finally(() => {
        latencies[k] = performance.now() - at
        if (++answered === total) allAnswered()
      })
  }
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * rate) + 1)
    while (sent < due && sent - answered < maxInFlight) send(sent++)
    await new Promise((r) => setTimeout(r, 1))
  }
  await done
  const wallSeconds = (performance.now() - start) / 1000
  const cpu = process.cpuUsage(cpu0)
  latencies.sort()
  const at = (q: number) =>
    Math.round(latencies[Math.min(total - 1, Math.ceil(q * total) - 1)]! * 10) / 10
  return {
    beats: total,
    answered: total - errors,
    errors,
    ...(firstError === undefined ? {} : { firstError }),
    staleHashAnswers: stale,
    wallSeconds: Math.round(wallSeconds * 100) / 100,
    beatsPerSec: Math.round(total / wallSeconds),
    keptPace: wallSeconds <= seconds * 1.05,
    maxLagMs: Math.round(maxLagMs),
    latencyMs: { p50: at(0.5), p99: at(0.99), max: at(1) },
    agentsProcessCpuPercent: Math.round((cpu.user + cpu.system) / (wallSeconds * 1e4)),
    loadAverageAtStart: load1,
  }
}

/** Devices for every agent, one agent in ten silent for an hour; one sweep timed, then another. */
async function timeSweep(url: string, agents: number, perAgent: number) {
  const handle = await openDatabase(url)
  const committer = createGroupCommitter(handle, { intervalMs: 10, maxBatch: 64 })
  try {
    const now = formatTimestamp(new Date())
    const devices = Array.from({ length: agents * perAgent }, (_, n) => ({
      uuid: randomUUID(),
      type: 'GPU',
      vendor: '10de',
      model: 'bench',
      std_board_info: null,
      vendor_board_info: null,
      hostname: hostName(Math.floor(n / perAgent)),
      lifecycle: 'active',
      cpid_type: 'PCI',
      cpid_info: `{"bus":"${(n % perAgent).toString(16)}","device":"00","domain":"0000","function":"0"}`,
      created_at: now,
      updated_at: null,
    }))
    for (let i = 0; i < devices.length; i += 1000)
      await handle.db
        .insertInto('devices')
        .values(devices.slice(i, i + 1000))
        .execute()
    const silent = Array.from({ length: Math.floor(agents / 10) }, (_, k) => hostName(k * 10))
    const hourAgo = formatTimestamp(new Date(Date.now() - 3_600_000))
    for (let i = 0; i < silent.length; i += 1000)
      await handle.db
        .updateTable('services')
        .set({ last_seen: hourAgo })
        .where('binary', '=', AGENT)
        .where('host', 'in', silent.slice(i, i + 1000))
        .execute()
    await sql`ANALYZE`.execute(handle.db)
    const sync = async () => {}
    const deps = { db: handle, committer, log: noopLogger, clock: systemClock, syncPlacement: sync }
    const t0 = performance.now()
    const fenced = await sweepLeases(deps, 60_000)
    const fenceMs = performance.now() - t0
    const t1 = performance.now()
    const again = await sweepLeases(deps, 60_000)
    const idleMs = performance.now() - t1
    const unknown = await handle.db
      .selectFrom('devices')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('health', '=', 'unknown')
      .executeTakeFirstOrThrow()
    const fencedDevices = Number(unknown.n)
    return {
      agents,
      silentAgents: silent.length,
      devices: devices.length,
      fence: {
        ms: Math.round(fenceMs),
        hostsFenced: fenced.length,
        devicesFenced: fencedDevices,
        correct: fenced.length === silent.length && fencedDevices === silent.length * perAgent,
      },
      nothingToFence: { ms: Math.round(idleMs), hostsFenced: again.length },
    }
  } finally {
    await committer.close()
    await handle.close()
  }
}

if (process.argv[2] === '--conductor') await conductorChild(process.argv.slice(3))
else await main()
