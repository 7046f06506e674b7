/**
 * The servers bench/boot-storm.ts storms: the bare ceiling, the embedded one (with or without
 * cleaning), and api + N conductors. Where cleaning is on, the storm host's stand-in agent
 * (bench/storm/storm-clean-agent.ts) answers `cleanUnit`: in the embedded process on its bus, and here
 * on the vhost's RabbitMQ for api + N conductors.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createRabbitMqBus } from '../../src/bus/rabbitmq-bus.js'
import { testBroker } from '../../test/support/peers/rabbitmq.js'
import { testDialects } from '../../test/support/db.js'
import { createConductorClient } from '../../src/rpc/conductor-rpc.js'
import {
  NODE,
  ROOT,
  freePort,
  printed,
  runCommand,
  startService,
  type RunningService,
} from '../../test/support/service.js'
import { STORM_HOST, seedStorm } from '../../test/support/storm-inventory.js'
import { serveStormCleanAgent } from './storm-clean-agent.js'

export interface StormTarget {
  url: string
  /** The storm host's deployable providers, as Placement would hand them to Nova. */
  rps: string[]
  stop(): Promise<void>
}

export async function providers(url: string): Promise<string[]> {
  const res = await fetch(`${url}/v2/deployables`)
  const { deployables } = (await res.json()) as { deployables: { name: string; rp_uuid: string }[] }
  return deployables.filter((d) => d.name.startsWith(`${STORM_HOST}_`)).map((d) => d.rp_uuid)
}

/** Runs a bench/ server script as a child process, with these arguments, until it prints "ready <url>". */
async function startChild(
  script: string,
  args: string[],
  cleanup = async () => {},
  env: Record<string, string> = {},
): Promise<StormTarget> {
  const child = spawn(
    NODE,
    ['--import', 'tsx', path.join(ROOT, 'bench', 'storm', script), ...args],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, ...env },
    },
  )
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      const m = /ready (\S+)/.exec(d.toString())
      if (m) resolve(m[1]!)
    })
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)))
  })
  return {
    url,
    rps: await providers(url),
    async stop() {
      child.kill('SIGTERM')
      await new Promise((r) => child.once('exit', r))
      await cleanup()
    },
  }
}

/** The ceiling: a bare node:http server with in-memory state (bench/storm/boot-storm-bare.ts). */
export async function startBare(): Promise<StormTarget> {
  return startChild('boot-storm-bare.ts', [String(await freePort())])
}

/** `cyborg up`'s composition; `cleaning` false starts its conductor with `cleaning: false`. */
export async function startEmbedded(cleaning = true): Promise<StormTarget> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cyborg-storm-'))
  return startChild(
    'boot-storm-embedded.ts',
    [dir, String(await freePort())],
    () => rm(dir, { recursive: true, force: true }),
    { STORM_CLEANING: cleaning ? '1' : '0' },
  )
}

export async function startMulti(conductors: number): Promise<StormTarget> {
  const postgres = (await testDialects()).find((d) => d.name === 'postgres')!
  const broker = await testBroker()
  if (postgres.skip || broker.skip)
    throw new Error(
      `multi-process storm needs PostgreSQL and RabbitMQ: ${postgres.skip ?? broker.skip}`,
    )
  const [db, vhost] = await Promise.all([postgres.create(), broker.createVhost()])
  const env = {
    CYBORG_DATABASE__CONNECTION: db.url,
    CYBORG_DEFAULT__TRANSPORT_URL: vhost.url,
    CYBORG_LOG_LEVEL: 'warn',
    // The storm host is seeded without an agent: no heartbeat keeps its lease, so give it a day.
    CYBORG_DEFAULT__SERVICE_DOWN_TIME: '86400',
  }
  const started: RunningService[] = []
  const sync = await runCommand(['db', 'sync'], env)
  if (sync.code !== 0) throw new Error(`db sync: ${sync.output}`)
  for (let i = 0; i < conductors; i++) {
    started.push(
      await startService({
        command: ['conductor'],
        env: { ...env, CYBORG_LOG_LEVEL: 'info' },
        ready: printed(/cyborg conductor is ready/),
      }),
    )
  }
  const api = await startService({ command: ['api'], env })
  started.push(api)
  const bus = await createRabbitMqBus({ url: vhost.url })
  await seedStorm(createConductorClient(bus, { timeoutMs: 30_000 }))
  // The conductors clean released units through the storm host's agent: this stands in for it.
  const agent = await serveStormCleanAgent(bus)
  return {
    url: api.url,
    rps: await providers(api.url),
    async stop() {
      await Promise.all(started.map((s) => s.stop()))
      await agent.stop()
      await bus.close()
      process.stderr.write(`storm clean agent (multi): ${JSON.stringify(agent.stats())}\n`)
      await vhost.drop()
      await db.close()
    },
  }
}
