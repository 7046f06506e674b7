/**
 * Discovery on one host: a synthetic 64-device host (16 T4 GPUs with vGPU types, 16 QAT PFs with
 * 8 VFs each, 16 NVMe SSDs, 16 generic PCI functions matched by device_spec; see host-fixture.ts)
 * written to a temporary directory and read through the fixture host probe by every built-in
 * driver but `fake`, as the agent runs them (discoverAll, then buildSnapshot which normalises
 * and hashes). The empty host is measured alongside as the baseline. Then child processes report
 * their RSS after the agent's first discovery + report (discovery-agent.ts, each mode run
 * --rss-repeats times, median kept): agent + conductor on SQLite in one process (`agentRssMb`),
 * the agent on RabbitMQ (under tsx, and bundled by esbuild on plain Node), the agent with a
 * conductor stub, and Node + tsx alone. Prints one JSON document.
 * Usage: node --import tsx bench/discovery.ts [--runs 50] [--warmup 10] [--qat-vfs 8] [--rss-repeats 3]
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { cpus, tmpdir } from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { createDrivers } from '../src/drivers/index.js'
import { createFixtureHostProbe } from '../src/drivers/host-probe/fixture-host-probe.js'
import { createCachingHostProbe } from '../src/drivers/host-probe/caching-host-probe.js'
import { buildSnapshot, discoverAll } from '../src/agent/snapshot.js'
import { childRss, rabbitMqAgentRss } from './ingest/agent-rss.js'
import { eventLoopLag } from './support/load.js'
import {
  DEFAULT_SHAPE,
  DRIVER_OPTIONS,
  ENABLED_DRIVERS,
  writeEmptyHost,
  writeHostFixture,
} from './ingest/host-fixture.js'

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '50' },
    warmup: { type: 'string', default: '10' },
    'rss-repeats': { type: 'string', default: '3' },
    'qat-vfs': { type: 'string', default: String(DEFAULT_SHAPE.qatVfs) },
  },
})
const runs = Number(values.runs)
const warmup = Number(values.warmup)
const repeats = Number(values['rss-repeats'])
const shape = { ...DEFAULT_SHAPE, qatVfs: Number(values['qat-vfs']) }
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d
const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!

async function measure(dir: string, cache = false) {
  const fixture = createFixtureHostProbe(dir)
  // The agent's probe (src/main/core.ts): reads cached for one discovery. Uncached: every driver reads itself.
  const probe = cache ? createCachingHostProbe(fixture) : { ...fixture, reset() {} }
  const drivers = createDrivers(
    ENABLED_DRIVERS,
    { host: probe, hostname: 'bench-host' },
    DRIVER_OPTIONS,
  )
  const signal = new AbortController().signal
  const perDriver: Record<string, number[]> = {}
  const once = async () => {
    probe.reset()
    const started = performance.now()
    const {
      devices,
      failures,
      runs: driverRuns,
    } = await discoverAll(drivers, { signal, timeoutMs: 60_000 })
    for (const r of driverRuns) (perDriver[r.driver] ??= []).push(r.durationMs)
    if (failures.length > 0)
      throw new Error(
        `driver failed: ${failures.map((f) => `${f.driver}: ${f.error.message}`).join('; ')}`,
      )
    const snapshot = buildSnapshot('bench-host', devices)
    return { ms: performance.now() - started, snapshot }
  }
  for (let i = 0; i < warmup; i++) await once()
  for (const k of Object.keys(perDriver)) delete perDriver[k]
  const times: number[] = []
  let last
  for (let i = 0; i < runs; i++) {
    last = await once()
    times.push(last.ms)
  }
  times.sort((a, b) => a - b)
  const devices = last!.snapshot.devices
  return {
    devices: devices.length,
    deployables: devices.reduce((n, d) => n + d.deployables.length, 0),
    attachHandles: devices.reduce(
      (n, d) => n + d.deployables.reduce((m, x) => m + x.attachHandles.length, 0),
      0,
    ),
    snapshotJsonKb: round(JSON.stringify(last!.snapshot).length / 1024, 1),
    medianMs: round(quantile(times, 0.5)),
    p95Ms: round(quantile(times, 0.95)),
    maxMs: round(times[times.length - 1]!),
    perDriverMedianMs: Object.fromEntries(
      Object.entries(perDriver).map(([d, t]) => [
        d,
        round(
          quantile(
            t.sort((a, b) => a - b),
            0.5,
          ),
        ),
      ]),
    ),
  }
}

const base = await mkdtemp(path.join(tmpdir(), 'cyborg-bench-discovery-'))
const lag = eventLoopLag()
try {
  const hostDir = path.join(base, 'host')
  const emptyDir = path.join(base, 'empty')
  const expected = await writeHostFixture(hostDir, shape)
  await writeEmptyHost(emptyDir)
  const host = await measure(hostDir, true)
  if (host.devices !== expected)
    throw new Error(`found ${host.devices} devices, expected ${expected}`)
  const empty = await measure(emptyDir, true)
  const uncached = await measure(hostDir)
  const benchRssMb = round(process.memoryUsage().rss / 1048576, 1)
  const full = await childRss(hostDir, 'full', repeats)
  const agentOnly = await childRss(hostDir, 'agent', repeats)
  const baseline = await childRss(hostDir, 'baseline', repeats)
  const overRabbitMq = await rabbitMqAgentRss(hostDir, repeats)
  const cli = 'skipped' in overRabbitMq ? undefined : overRabbitMq.cyborgAgent
  const results = {
    host64: {
      ...host,
      what: 'as the agent discovers: one caching probe shared by the drivers, reset per discovery',
    },
    emptyHost: empty,
    host64Uncached: {
      ...uncached,
      what: 'the same host with every driver reading sysfs itself (before the caching probe)',
    },
    benchProcessRssMb: benchRssMb,
    agentRssMb: cli?.rssMb ?? null,
    agentRss: {
      cyborgAgent: cli
        ? {
            ...cli,
            what: 'the real `cyborg agent` process (bin/cyborg, compiled) over RabbitMQ, drivers reading this host via [agent] host_root',
          }
        : overRabbitMq,
      full: {
        ...full,
        what: 'createAgent (started) + in-process bus + conductor on SQLite, one process (as cyborg up)',
      },
      agentOverRabbitMq: {
        ...overRabbitMq,
        what: 'createAgent (started) on a RabbitMQ bus, conductor in another process (as cyborg agent); under tsx, and bundled by esbuild on plain node',
      },
      agentWithConductorStub: {
        ...agentOnly,
        what: 'createAgent, drivers, fixture probe; conductor stubbed, no database modules',
      },
      nodeWithTsx: { ...baseline, what: 'node + tsx loader, nothing else loaded' },
    },
    goals: {
      discoveryUnder200Ms: { goal: '< 200 ms', p95Ms: host.p95Ms, met: host.p95Ms < 200 },
      agentRssUnder80Mb: {
        goal: '< 80 MB',
        agentRssMb: cli?.rssMb ?? null,
        met: cli ? cli.rssMb < 80 : null,
        agentAloneOverRabbitMqMb:
          'skipped' in overRabbitMq
            ? null
            : {
                tsx: overRabbitMq.tsx.rssMb,
                bundledPlainNode: overRabbitMq.bundledPlainNode.rssMb,
              },
      },
    },
  }
  process.stdout.write(
    JSON.stringify(
      {
        benchmark: 'discovery',
        date: new Date().toISOString(),
        machine: { cpus: cpus().length, node: process.version },
        settings: {
          runs,
          warmup,
          rssRepeats: repeats,
          shape,
          drivers: ENABLED_DRIVERS,
          probe: 'fixture host probe over a temp dir (page cache)',
        },
        results,
        eventLoopLag: {
          benchmarkProcess: lag(),
          services: 'discovery runs in the benchmark process; the RSS children are not measured',
        },
      },
      null,
      2,
    ) + '\n',
  )
} finally {
  await rm(base, { recursive: true, force: true })
}
