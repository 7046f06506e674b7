/**
 * The servers bench/webhook-failure.ts loads, each process with a /metrics to scrape (event-loop
 * lag) and a pid (CPU time):
 * - `embedded`: `cyborg up`'s composition in one process (bench/storm/boot-storm-embedded.ts: SQLite,
 *   in-process bus, conductor with its webhook dispatcher, HTTP API, the storm host's stand-in
 *   agent answering its cleans).
 * - `multi`: the production shape, `cyborg api` + `cyborg conductor` + `cyborg agent` (fake
 *   driver, a host of its own) over RabbitMQ and MariaDB, each its own process; the storm host is
 *   seeded over the bus and its cleans answered by the stand-in agent in the bench's process.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createRabbitMqBus } from '../../src/bus/rabbitmq-bus.js'
import { createConductorClient } from '../../src/rpc/conductor-rpc.js'
import { testDialects } from '../../test/support/db.js'
import { testBroker } from '../../test/support/peers/rabbitmq.js'
import {
  NODE,
  ROOT,
  freePort,
  printed,
  runCommand,
  startService,
  type RunningService,
} from '../../test/support/service.js'
import { seedStorm } from '../../test/support/storm-inventory.js'
import { providers, stopChild } from './events-targets.js'
import { serveStormCleanAgent } from '../storm/storm-clean-agent.js'

export interface Proc {
  name: string
  pid: number | undefined
  metricsUrl: string
}

export interface FailureTarget {
  url: string
  /** The storm host's deployable providers (what Placement would pick). */
  rps: string[]
  procs: Proc[]
  stop(): Promise<void>
}

/**
 * `[webhooks]` for both shapes: enough attempts that no delivery goes dead while its receiver is
 * down for the length of a run, and back-off capped at 4 s, so that a receiver that comes back is
 * found within 4 s.
 */
export const WEBHOOK_ENV = {
  CYBORG_WEBHOOKS__MAX_ATTEMPTS: '100',
  CYBORG_WEBHOOKS__MAX_BACKOFF_SECONDS: '4',
  CYBORG_WEBHOOKS__TIMEOUT_SECONDS: '5',
}

export async function startEmbeddedTarget(): Promise<FailureTarget> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cyborg-whfail-'))
  const script = path.join(ROOT, 'bench', 'storm', 'boot-storm-embedded.ts')
  const child = spawn(NODE, ['--import', 'tsx', script, dir, String(await freePort())], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...WEBHOOK_ENV, STORM_CLEANING: '1', STORM_METRICS: '1' },
  })
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      const m = /ready (\S+)/.exec(d.toString())
      if (m) resolve(m[1]!)
    })
    child.once('exit', (code) => reject(new Error(`the embedded server exited with ${code}`)))
  })
  return {
    url,
    rps: await providers(url),
    procs: [{ name: 'embedded', pid: child.pid, metricsUrl: `${url}/metrics` }],
    async stop() {
      await stopChild(child)
      await rm(dir, { recursive: true, force: true })
    },
  }
}

export async function startMultiTarget(): Promise<FailureTarget> {
  const mariadb = (await testDialects()).find((d) => d.name === 'mysql')!
  const broker = await testBroker()
  if (mariadb.skip || broker.skip)
    throw new Error(`the multi target needs MariaDB and RabbitMQ: ${mariadb.skip ?? broker.skip}`)
  const [db, vhost] = await Promise.all([mariadb.create(), broker.createVhost()])
  const env = {
    CYBORG_DATABASE__CONNECTION: db.url,
    CYBORG_DEFAULT__TRANSPORT_URL: vhost.url,
    CYBORG_LOG_LEVEL: 'warn',
    // The storm host is seeded without an agent: no heartbeat keeps its lease, so give it a day.
    CYBORG_DEFAULT__SERVICE_DOWN_TIME: '86400',
    ...WEBHOOK_ENV,
  }
  const started: RunningService[] = []
  const procs: Proc[] = []
  let bus: Awaited<ReturnType<typeof createRabbitMqBus>> | undefined
  let agent: Awaited<ReturnType<typeof serveStormCleanAgent>> | undefined
  const stop = async () => {
    await Promise.all(started.map((s) => s.stop()))
    await agent?.stop()
    await bus?.close()
    await vhost.drop()
    await db.close()
  }
  const start = async (name: string, extra: Record<string, string> = {}) => {
    const port = await freePort()
    const service = await startService({
      command: [name],
      env: {
        ...env,
        CYBORG_LOG_LEVEL: 'info',
        CYBORG_METRICS__LISTEN: `127.0.0.1:${port}`,
        ...extra,
      },
      ready: name === 'api' ? undefined : printed(new RegExp(`"msg":"cyborg ${name} is ready"`)),
      timeoutMs: 60_000,
    })
    started.push(service)
    procs.push({ name, pid: service.child.pid, metricsUrl: `http://127.0.0.1:${port}/metrics` })
    return service
  }
  try {
    const sync = await runCommand(['db', 'sync'], env)
    if (sync.code !== 0) throw new Error(`db sync: ${sync.output}`)
    await start('conductor')
    const api = await start('api', { CYBORG_LOG_LEVEL: 'warn' })
    await start('agent', {
      CYBORG_DEFAULT__HOST: 'bench-agent',
      CYBORG_AGENT__AUTO_ACTIVATE: 'true',
    })
    bus = await createRabbitMqBus({ url: vhost.url })
    await seedStorm(createConductorClient(bus, { timeoutMs: 30_000 }))
    // The conductor cleans released units through the storm host's agent: this stands in for it.
    agent = await serveStormCleanAgent(bus)
    return { url: api.url, rps: await providers(api.url), procs, stop }
  } catch (err) {
    await stop()
    throw err
  }
}
