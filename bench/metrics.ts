/**
 * The cost of metrics (issue 16), two figures in one run:
 * 1. The hot path: `GET /v2/devices/{uuid}` on two `cyborg up` (embedded: SQLite, fake driver), one
 *    with metrics (`[metrics] enabled`: every request counted and timed) and one without
 *    (`enabled = false`, no listener: nothing recorded), loaded alternately round by round with
 *    autocannon, each first in turn. Goal: with metrics ≥ 95 % of the req/s without.
 * 2. A conductor's scrape with 10,000 devices: the fleet gauges counted from a SQLite database of
 *    2,500 hosts × 4 devices (refreshFleetGauges, on its timer in production), then the exposition
 *    timed (what a scrape costs: the gauges are in memory). Goal: < 50 ms.
 * Prints one JSON document. Usage: npm run bench:metrics [-- --duration 10 --connections 50 --rounds 2 --devices 10000]
 */
import { loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import {
  load as loadUrl,
  machineFacts,
  meanFigures,
  compareFigures,
  type LoadFigures,
} from './support/load.js'
import { startService, type RunningService } from '../test/support/service.js'
import { testDialects } from '../test/support/db.js'
import { ingestSnapshot } from '../test/support/ingest.js'
import { sampleSnapshot } from '../test/support/sample-inventory.js'
import { refreshFleetGauges } from '../src/conductor/fleet-metrics.js'
import { createPrometheusMetrics } from '../src/main/metrics/prometheus.js'

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '2' },
    devices: { type: 'string', default: '10000' },
  },
})
const duration = Number(values.duration)
const connections = Number(values.connections)
const rounds = Number(values.rounds)
const deviceCount = Number(values.devices)

const load = (service: RunningService, url: string) =>
  loadUrl(url, { connections, duration, pid: service.child.pid })

const mean = meanFigures

/** The URL of GET-one on the first device of a running `cyborg up`. */
async function deviceUrl(service: RunningService): Promise<string> {
  const res = await fetch(`${service.url}/v2/devices`)
  const { devices } = (await res.json()) as { devices: { uuid: string }[] }
  if (devices.length === 0) throw new Error('no device to read')
  return `${service.url}/v2/devices/${devices[0]!.uuid}`
}

async function hotPath() {
  const common = { CYBORG_LOG_LEVEL: 'warn', CYBORG_DEFAULT__HOST: 'bench-host' }
  const ready = async (u: string) =>
    ((await (await fetch(`${u}/v2/devices`)).json()) as { devices: unknown[] }).devices.length > 0
  const on = await startService({ env: { ...common, CYBORG_METRICS__ENABLED: 'true' }, ready })
  const off = await startService({ env: { ...common, CYBORG_METRICS__ENABLED: 'false' }, ready })
  try {
    const [onUrl, offUrl] = [await deviceUrl(on), await deviceUrl(off)]
    if ((await fetch(`${off.url}/metrics`)).status !== 404) throw new Error('metrics not off')
    const perRound: { on: LoadFigures; off: LoadFigures }[] = []
    for (let i = 0; i < rounds; i++) {
      const first = i % 2 === 1 ? await load(on, onUrl) : undefined
      const o = await load(off, offUrl)
      const m = first ?? (await load(on, onUrl))
      perRound.push({ on: m, off: o })
    }
    const a = mean(perRound.map((r) => r.on))
    const b = mean(perRound.map((r) => r.off))
    return {
      request: 'GET /v2/devices/{uuid}',
      withMetrics: a,
      withoutMetrics: b,
      ...compareFigures(a, b),
      goal: 0.95,
      rounds: perRound.map((r) => ({
        on: r.on.requestsPerSec,
        off: r.off.requestsPerSec,
        ratio: Math.round((r.on.requestsPerSec / r.off.requestsPerSec) * 1000) / 1000,
      })),
    }
  } finally {
    await Promise.all([on.stop(), off.stop()])
  }
}

async function scrape() {
  const [sqlite] = await testDialects()
  const db = await sqlite!.create()
  try {
    const hosts = Math.ceil(deviceCount / 4)
    const now = '2026-11-25T06:00:00.000000+00:00'
    for (let h = 0; h < hosts; h++)
      await ingestSnapshot(db.db, sampleSnapshot(`bench-${h}`, 4), {
        autoActivate: h % 2 === 0,
        now,
      })
    const metrics = createPrometheusMetrics()
    const countStart = performance.now()
    await refreshFleetGauges(db.db, metrics, now)
    const countMs = performance.now() - countStart
    await metrics.expose() // warm-up: the first exposition also compiles the code on its path
    const times: number[] = []
    let bytes = 0
    for (let i = 0; i < 20; i++) {
      const start = performance.now()
      bytes = (await metrics.expose()).body.length
      times.push(performance.now() - start)
    }
    times.sort((x, y) => x - y)
    const round = (x: number) => Math.round(x * 10) / 10
    return {
      devices: hosts * 4,
      hosts,
      database: 'sqlite',
      fleetCountMs: round(countMs),
      scrapeMs: { p50: round(times[10]!), max: round(times.at(-1)!), samples: times.length },
      expositionBytes: bytes,
      goalMs: 50,
    }
  } finally {
    await db.close()
  }
}

const loadAtStart = loadavg()[0]!
const results = { hotPath: await hotPath(), conductorScrape: await scrape() }
process.stdout.write(
  `${JSON.stringify(
    {
      benchmark: 'metrics',
      date: new Date().toISOString(),
      machine: machineFacts(loadAtStart),
      settings: {
        connections,
        durationSeconds: duration,
        rounds,
        client: 'autocannon (same machine)',
      },
      results,
    },
    null,
    2,
  )}\n`,
)
