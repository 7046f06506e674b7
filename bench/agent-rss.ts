/**
 * RSS of agent processes for bench/discovery.ts: runs bench/discovery-agent.ts in child processes,
 * under tsx or bundled by esbuild for plain Node, and serves the conductor the RabbitMQ mode reports to.
 */
import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { NODE, ROOT } from '../test/support/service.js'
import { testBroker } from '../src/bus/rabbitmq-testing.js'
import { createRabbitMqBus } from '../src/bus/rabbitmq-bus.js'
import { openDatabase } from '../src/db/connection.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { startCore } from '../src/main/core.js'
import { noopLogger } from '../src/domain/logger.js'

/** The child's figures, run `repeats` times: the run with the median RSS, and the range. */
export async function childRss(dir: string, mode: string, repeats: number, extra: string[] = [], bundle?: string) {
  const out: { rssMb: number; heapUsedMb: number; result: unknown }[] = []
  for (let i = 0; i < repeats; i++) {
    const script = bundle ? [bundle] : ['--import', 'tsx', path.join(ROOT, 'bench/discovery-agent.ts')]
    const args = [...script, dir, mode, ...extra]
    const { stdout } = await promisify(execFile)(NODE, args, { cwd: ROOT })
    out.push(JSON.parse(stdout.trim().split('\n').pop()!) as (typeof out)[number])
  }
  out.sort((a, b) => a.rssMb - b.rssMb)
  return { ...out[Math.floor(out.length / 2)]!, rssRangeMb: [out[0]!.rssMb, out[out.length - 1]!.rssMb] }
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
  const entry = path.join(ROOT, 'bench/discovery-agent.ts')
  // Code splitting keeps the dynamic imports lazy: the rabbitmq mode never loads the database modules.
  await build({ entryPoints: [entry], outdir: dir, outExtension: { '.js': '.mjs' }, bundle: true, splitting: true, platform: 'node', format: 'esm', packages: 'external', target: 'node24', logLevel: 'silent' })
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
