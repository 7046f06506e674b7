/**
 * RSS of agent processes for bench/discovery.ts: runs bench/ingest/discovery-agent.ts in child processes,
 * under tsx or bundled by esbuild for plain Node, and serves the conductor the RabbitMQ mode reports to.
 */
import { execFile, spawn } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { NODE, ROOT } from '../../test/support/service.js'
import { testBroker } from '../../test/support/peers/rabbitmq.js'
import { BIN } from '../../test/support/cli.js'
import { createRabbitMqBus } from '../../src/bus/rabbitmq-bus.js'
import { openDatabase } from '../../src/db/core/connection.js'
import { migrateToLatest } from '../../src/db/core/migrate.js'
import { startCore } from '../../src/main/core.js'
import { noopLogger } from '../../src/domain/logger.js'

/** The child's figures, run `repeats` times: the run with the median RSS, and the range. */
export async function childRss(
  dir: string,
  mode: string,
  repeats: number,
  extra: string[] = [],
  bundle?: string,
) {
  const out: { rssMb: number; heapUsedMb: number; result: unknown }[] = []
  for (let i = 0; i < repeats; i++) {
    const script = bundle
      ? [bundle]
      : ['--import', 'tsx', path.join(ROOT, 'bench/ingest/discovery-agent.ts')]
    const args = [...script, dir, mode, ...extra]
    const { stdout } = await promisify(execFile)(NODE, args, { cwd: ROOT })
    out.push(JSON.parse(stdout.trim().split('\n').pop()!) as (typeof out)[number])
  }
  out.sort((a, b) => a.rssMb - b.rssMb)
  return {
    ...out[Math.floor(out.length / 2)]!,
    rssRangeMb: [out[0]!.rssMb, out[out.length - 1]!.rssMb],
  }
}

/**
 * discovery-agent.ts bundled with esbuild (tsx's own compiler), to run on plain Node without the
 * tsx loader. Written below node_modules/.cache so that its package imports resolve; removed after.
 */
async function bundleAgent(): Promise<{ file: string; remove(): Promise<void> }> {
  const { build } = await import('esbuild')
  await mkdir(path.join(ROOT, 'node_modules/.cache'), { recursive: true })
  const dir = await mkdtemp(path.join(ROOT, 'node_modules/.cache/cyborg-bench-'))
  const file = path.join(dir, 'discovery-agent.mjs')
  const entry = path.join(ROOT, 'bench/ingest/discovery-agent.ts')
  // Code splitting keeps the dynamic imports lazy: the rabbitmq mode never loads the database modules.
  await build({
    entryPoints: [entry],
    outdir: dir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    target: 'node24',
    logLevel: 'silent',
  })
  return { file, remove: () => rm(dir, { recursive: true, force: true }) }
}

/** The agent over RabbitMQ, reporting to a conductor (SQLite in memory) served here on a fresh vhost. */
export async function rabbitMqAgentRss(dir: string, repeats: number) {
  const broker = await testBroker()
  if (broker.skip) return { skipped: broker.skip }
  const vhost = await broker.createVhost()
  const db = await openDatabase('sqlite://')
  await migrateToLatest(db)
  const bus = await createRabbitMqBus({ url: vhost.url })
  const core = await startCore({ db, bus, log: noopLogger, agent: false })
  const bundle = await bundleAgent()
  try {
    return {
      cyborgAgent: await cliAgentRss(dir, vhost.url, repeats),
      tsx: await childRss(dir, 'rabbitmq', repeats, [vhost.url]),
      bundledPlainNode: await childRss(dir, 'rabbitmq', repeats, [vhost.url], bundle.file),
    }
  } finally {
    await bundle.remove()
    await core.stop()
    await bus.close()
    await db.close()
    await vhost.drop()
  }
}

/**
 * The real `cyborg agent` process (bin/cyborg: the compiled build, rebuilt first if stale) over RabbitMQ, its drivers reading the
 * fixture host through `[agent] host_root`, discovering every second: VmRSS 8 s after it is ready
 * (`reports`: changed reports it logged; the later ones are unchanged).
 */
async function cliAgentRss(dir: string, url: string, repeats: number) {
  const { ENABLED_DRIVERS, DRIVER_OPTIONS } = await import('./host-fixture.js')
  const samples: { rssMb: number; reports: number }[] = []
  for (let i = 0; i < repeats; i++) {
    const state = await mkdtemp(path.join(tmpdir(), 'cyborg-bench-agent-'))
    const child = spawn(BIN, ['agent'], {
      env: {
        PATH: process.env.PATH ?? '',
        CYBORG_DEFAULT__TRANSPORT_URL: url,
        CYBORG_DEFAULT__HOST: `bench-cli-${i}`,
        CYBORG_DEFAULT__STATE_PATH: state,
        CYBORG_DEFAULT__PERIODIC_INTERVAL: '1',
        CYBORG_AGENT__HOST_ROOT: dir,
        CYBORG_AGENT__ENABLED_DRIVERS: ENABLED_DRIVERS.join(','),
        CYBORG_PCI__DEVICE_SPEC: DRIVER_OPTIONS.pci.device_spec,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    const reports = () => (out.match(/"msg":"inventory reported"/g) ?? []).length
    const started = Date.now()
    while (
      Date.now() - started < 30_000 &&
      (out.match(/cyborg agent is ready/g) ?? []).length === 0
    )
      await sleep(100)
    await sleep(8000)
    const status = await readFile(`/proc/${child.pid}/status`, 'utf8')
    samples.push({
      rssMb: Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 102.4) / 10,
      reports: reports(),
    })
    child.kill('SIGTERM')
    await new Promise((r) => child.once('close', r))
    await rm(state, { recursive: true, force: true })
  }
  samples.sort((a, b) => a.rssMb - b.rssMb)
  return {
    rssMb: samples[Math.floor(samples.length / 2)]!.rssMb,
    rssRangeMb: [samples[0]!.rssMb, samples.at(-1)!.rssMb],
    samples,
  }
}
