/**
 * API read throughput: `cyborg up` (embedded: SQLite, in-process bus, fake driver) against a bare
 * node:http server, loaded one after the other in the same run with autocannon.
 * Prints one JSON document. Usage: npm run bench:api-read [-- --duration 10 --connections 50]
 */
import { spawn } from 'node:child_process'
import { parseArgs } from 'node:util'
import { cpus } from 'node:os'
import autocannon from 'autocannon'
import { NODE, ROOT, freePort, startService } from '../test/support/service.js'

const { values } = parseArgs({
  options: { duration: { type: 'string', default: '10' }, connections: { type: 'string', default: '50' } },
})
const duration = Number(values.duration)
const connections = Number(values.connections)

interface Figures {
  url: string
  requestsPerSec: number
  p50Ms: number
  p99Ms: number
  non2xx: number
  errors: number
}

async function load(url: string): Promise<Figures> {
  // A short warm-up lets V8 optimise the hot path before the measured run.
  await autocannon({ url, connections, duration: 2 })
  const r = await autocannon({ url, connections, duration })
  return {
    url,
    requestsPerSec: Math.round(r.requests.average),
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors,
  }
}

async function startBare(): Promise<{ url: string; stop(): void }> {
  const port = await freePort()
  const child = spawn(NODE, ['--import', 'tsx', `${ROOT}/bench/bare-server.ts`, String(port)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  await new Promise<void>((resolve) => child.stdout?.once('data', () => resolve()))
  return { url: `http://127.0.0.1:${port}/`, stop: () => child.kill('SIGTERM') }
}

const service = await startService({ env: { CYBORG_LOG_LEVEL: 'warn', CYBORG_DEFAULT__HOST: 'bench-host' },
  ready: async (u) => ((await (await fetch(`${u}/v2/devices`)).json()) as { devices: unknown[] }).devices.length > 0 })
try {
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`${service.url}/v2/device_profiles`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ name: `bench-dp-${i}`, groups: [{ 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required' }] }]),
    })
    if (res.status !== 201) throw new Error(`profile create: ${res.status} ${await res.text()}`)
  }
  const devices = (await (await fetch(`${service.url}/v2/devices`)).json()) as { devices: { uuid: string }[] }
  const deviceUrl = `${service.url}/v2/devices/${devices.devices[0]!.uuid}`

  const getOne = await load(deviceUrl)
  const profiles = await load(`${service.url}/v2/device_profiles`)
  const bare = await startBare()
  let bareFigures: Figures
  try {
    bareFigures = await load(bare.url)
  } finally {
    bare.stop()
  }
  const ratio = (x: Figures) => Math.round((x.requestsPerSec / bareFigures.requestsPerSec) * 1000) / 1000
  process.stdout.write(
    `${JSON.stringify(
      {
        benchmark: 'api-read',
        date: new Date().toISOString(),
        machine: { cpus: cpus().length, node: process.version },
        settings: { connections, durationSeconds: duration, client: 'autocannon (same machine)' },
        results: {
          deviceGetOne: { ...getOne, ratioToBare: ratio(getOne) },
          deviceProfileList100: { ...profiles, ratioToBare: ratio(profiles) },
          bareNodeHttp: bareFigures,
        },
      },
      null,
      2,
    )}\n`,
  )
} finally {
  await service.stop()
}
