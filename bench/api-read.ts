/**
 * API read throughput: `cyborg up` (embedded: SQLite, in-process bus, fake driver) against a bare
 * node:http server, loaded one after the other in the same run with autocannon. Reports req/s,
 * latency and the server's CPU time per request.
 * `--baseline DIR` also runs another checkout's `cyborg up` (e.g. `git worktree add /tmp/base main`,
 * with its node_modules linked) and loads the two alternately, round by round, each first in turn:
 * the way to compare a change with what it changes.
 * Prints one JSON document. Usage: npm run bench:api-read [-- --duration 10 --connections 50 --baseline DIR --rounds 2]
 */
import { spawn } from 'node:child_process'
import { parseArgs } from 'node:util'
import { loadavg } from 'node:os'
import { load as loadUrl, machineFacts, type LoadFigures } from './support/load.js'
import { NODE, ROOT, freePort, startService, type RunningService } from '../test/support/service.js'

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    baseline: { type: 'string' },
    rounds: { type: 'string', default: '1' },
  },
})
const duration = Number(values.duration)
const connections = Number(values.connections)
const rounds = Number(values.rounds)

type Figures = LoadFigures & { url: string }

async function startBare(): Promise<{ url: string; pid: number | undefined; stop(): void }> {
  const port = await freePort()
  const child = spawn(NODE, ['--import', 'tsx', `${ROOT}/bench/bare-server.ts`, String(port)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  await new Promise<void>((resolve) => child.stdout?.once('data', () => resolve()))
  return { url: `http://127.0.0.1:${port}/`, pid: child.pid, stop: () => child.kill('SIGTERM') }
}

/** Starts one checkout's `cyborg up` with 100 device profiles; returns the two URLs loaded. */
async function startTarget(
  root: string,
): Promise<{ service: RunningService; getOne: string; list: string }> {
  const service = await startService({
    root,
    env: { CYBORG_LOG_LEVEL: 'warn', CYBORG_DEFAULT__HOST: 'bench-host' },
    ready: async (u) =>
      ((await (await fetch(`${u}/v2/devices`)).json()) as { devices: unknown[] }).devices.length >
      0,
  })
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`${service.url}/v2/device_profiles`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([
        {
          name: `bench-dp-${i}`,
          groups: [{ 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required' }],
        },
      ]),
    })
    if (res.status !== 201) throw new Error(`profile create: ${res.status} ${await res.text()}`)
  }
  const devices = (await (await fetch(`${service.url}/v2/devices`)).json()) as {
    devices: { uuid: string }[]
  }
  return {
    service,
    getOne: `${service.url}/v2/devices/${devices.devices[0]!.uuid}`,
    list: `${service.url}/v2/device_profiles`,
  }
}

const measure = async (url: string, pid: number | undefined): Promise<Figures> => ({
  url,
  ...(await loadUrl(url, { connections, duration, pid })),
})

const loadAtStart = loadavg()[0]!
const targets: { name: string; root: string }[] = [{ name: 'this', root: ROOT }]
if (values.baseline !== undefined) targets.push({ name: 'baseline', root: values.baseline })
const started = await Promise.all(targets.map((t) => startTarget(t.root)))
try {
  const runs: Record<string, { deviceGetOne: Figures; deviceProfileList100: Figures }[]> = {}
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? targets.keys() : [...targets.keys()].reverse()
    for (const i of order) {
      const { service, getOne, list } = started[i]!
      const figures = {
        deviceGetOne: await measure(getOne, service.child.pid),
        deviceProfileList100: await measure(list, service.child.pid),
      }
      ;(runs[targets[i]!.name] ??= []).push(figures)
    }
  }
  const bare = await startBare()
  let bareFigures: Figures
  try {
    bareFigures = await measure(bare.url, bare.pid)
  } finally {
    bare.stop()
  }
  const ratio = (x: Figures) =>
    Math.round((x.requestsPerSec / bareFigures.requestsPerSec) * 1000) / 1000
  const withRatios = (list: { deviceGetOne: Figures; deviceProfileList100: Figures }[]) =>
    list.map((r) => ({
      deviceGetOne: { ...r.deviceGetOne, ratioToBare: ratio(r.deviceGetOne) },
      deviceProfileList100: {
        ...r.deviceProfileList100,
        ratioToBare: ratio(r.deviceProfileList100),
      },
    }))
  const [first] = withRatios(runs.this!)
  process.stdout.write(
    `${JSON.stringify(
      {
        benchmark: 'api-read',
        date: new Date().toISOString(),
        machine: machineFacts(loadAtStart),
        settings: {
          connections,
          durationSeconds: duration,
          rounds,
          client: 'autocannon (same machine)',
          baseline: values.baseline ?? null,
        },
        results: {
          ...first,
          bareNodeHttp: bareFigures,
          ...(values.baseline === undefined
            ? {}
            : { rounds: { this: withRatios(runs.this!), baseline: withRatios(runs.baseline!) } }),
        },
      },
      null,
      2,
    )}\n`,
  )
} finally {
  await Promise.all(started.map((s) => s.service.stop()))
}
