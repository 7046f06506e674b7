/**
 * API workers (issue 28): GET-one req/s of `cyborg api` with 1 and with 2 workers (`[api]
 * api_workers`), in the production shape: `cyborg conductor` and `cyborg api` over RabbitMQ and
 * PostgreSQL. Both APIs run side by side and are loaded in turn, round by round (each first in
 * turn), by autocannon in a process of its own (bench/workers/loadgen.ts). Reports req/s, p50/p99,
 * the server's event-loop lag (its /metrics: with workers, the mean of theirs) and the load
 * generator's, and CPU µs per request from /proc of each process: the api (its primary and each
 * worker), the conductor, every PostgreSQL process, the load generator, and the whole machine.
 * Prints one JSON document. Usage: npm run bench:api-workers [-- --workers 1,2 --duration 10 --connections 50 --rounds 2]
 */
import { spawn } from 'node:child_process'
import { loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import { machineFacts, scrapeEventLoopLag, type LagFigures } from './support/load.js'
import { childrenOf, cpuByPid, cpuOf, cpuPerRequest, grownBy, machineCpu } from './workers/procs.js'
import { testDialects } from '../test/support/db.js'
import { testBroker } from '../test/support/peers/rabbitmq.js'
import { NODE, ROOT, printed, runCommand, startService } from '../test/support/service.js'

const { values } = parseArgs({
  options: {
    workers: { type: 'string', default: '1,2' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '2' },
  },
})
const workerCounts = values.workers.split(',').map(Number)
const [duration, connections, rounds] = [values.duration, values.connections, values.rounds].map(
  Number,
) as [number, number, number]

interface Generated {
  requests: number
  requestsPerSec: number
  p50Ms: number
  p99Ms: number
  non2xx: number
  errors: number
  cpuSeconds: number
  eventLoopLag: LagFigures
}

/** autocannon in a child process; resolves with its JSON line. */
function generate(url: string, seconds: number): Promise<Generated> {
  const child = spawn(
    NODE,
    [
      '--import',
      'tsx',
      `${ROOT}/bench/workers/loadgen.ts`,
      url,
      String(connections),
      String(seconds),
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
  )
  let out = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  return new Promise((resolve, reject) =>
    child.once('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out) as Generated) : reject(new Error(`loadgen: ${code}`)),
    ),
  )
}

const loadAtStart = loadavg()[0]!
const postgres = (await testDialects()).find((d) => d.name === 'postgres')!
const broker = await testBroker()
const [db, vhost] = await Promise.all([postgres.create(), broker.createVhost()])
const env = {
  CYBORG_DATABASE__CONNECTION: db.url,
  CYBORG_DEFAULT__TRANSPORT_URL: vhost.url,
  CYBORG_LOG_LEVEL: 'info',
}
const sync = await runCommand(['db', 'sync'], env)
if (sync.code !== 0) throw new Error(sync.output)
const conductor = await startService({
  command: ['conductor'],
  env,
  ready: printed(/"msg":"cyborg conductor is ready"/),
})
const apis = await Promise.all(
  workerCounts.map((n) =>
    startService({
      command: ['api'],
      env: { ...env, CYBORG_API__API_WORKERS: String(n) },
      ready: printed(n === 1 ? /"msg":"cyborg api is ready at/ : new RegExp(`: ${n} workers"`)),
      timeoutMs: 60_000,
    }),
  ),
)
try {
  let uuid = ''
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`${apis[0]!.url}/v2/device_profiles`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ name: `bench-dp-${i}`, groups: [{ 'resources:FPGA': '1' }] }]),
    })
    if (res.status !== 201) throw new Error(`profile create: ${res.status} ${await res.text()}`)
    uuid = ((await res.json()) as { uuid: string }).uuid
  }
  const snapshot = (apiPid: number) => {
    const workers = childrenOf(apiPid)
    const m = machineCpu()
    return {
      cpu: {
        api: [apiPid, ...workers].reduce((s, p) => s + cpuOf(p), 0),
        apiPrimary: cpuOf(apiPid),
        ...Object.fromEntries(workers.map((p, i) => [`apiWorker${i + 1}`, cpuOf(p)])),
        conductor: cpuOf(conductor.child.pid!),
        machine: m.busy,
      },
      machineTotal: m.total,
      // PostgreSQL's backends for this database (their command line names it).
      postgres: cpuByPid(db.url.slice(db.url.lastIndexOf('/') + 1)),
    }
  }
  const measure = async (index: number) => {
    const api = apis[index]!
    const url = `${api.url}/v2/device_profiles/${uuid}`
    await generate(url, 2) // warm-up: V8 optimises the hot path first
    await scrapeEventLoopLag(`${api.url}/metrics`) // starts the server's next lag window
    const before = snapshot(api.child.pid!)
    const load = await generate(url, duration)
    const after = snapshot(api.child.pid!)
    const serverEventLoopLag = await scrapeEventLoopLag(`${api.url}/metrics`)
    const { cpuSeconds, eventLoopLag, ...figures } = load
    return {
      workers: workerCounts[index]!,
      ...figures,
      serverEventLoopLag,
      loadGeneratorEventLoopLag: eventLoopLag,
      cpuUsPerRequest: {
        ...cpuPerRequest(before.cpu, after.cpu, load.requests),
        postgres:
          Math.round(((grownBy(before.postgres, after.postgres) * 1e6) / load.requests) * 10) / 10,
        loadGenerator: Math.round(((cpuSeconds * 1e6) / load.requests) * 10) / 10,
      },
      machineBusyCores:
        Math.round(
          ((after.cpu.machine - before.cpu.machine) / (after.machineTotal - before.machineTotal)) *
            machineFacts(0).cpus *
            100,
        ) / 100,
    }
  }
  const runs: Awaited<ReturnType<typeof measure>>[] = []
  for (let round = 0; round < rounds; round++) {
    const order = [...workerCounts.keys()]
    for (const i of round % 2 === 0 ? order : order.reverse()) runs.push(await measure(i))
  }
  const mean = (n: number) => {
    const xs = runs.filter((r) => r.workers === n)
    return Math.round(xs.reduce((s, r) => s + r.requestsPerSec, 0) / xs.length)
  }
  process.stdout.write(
    `${JSON.stringify(
      {
        benchmark: 'api-workers',
        date: new Date().toISOString(),
        machine: {
          ...machineFacts(loadAtStart),
          loadAverage1mAtEnd: Math.round(loadavg()[0]! * 100) / 100,
        },
        settings: {
          workers: workerCounts,
          connections,
          durationSeconds: duration,
          rounds,
          route: 'GET /v2/device_profiles/{uuid}',
          shape:
            'cyborg api + cyborg conductor, RabbitMQ, PostgreSQL; autocannon in its own process',
        },
        meanRequestsPerSec: Object.fromEntries(workerCounts.map((n) => [`workers${n}`, mean(n)])),
        runs,
      },
      null,
      2,
    )}\n`,
  )
} finally {
  await Promise.all([...apis, conductor].map((s) => s.stop()))
  await vhost.drop()
  await db.close()
}
