/**
 * bench/events.ts's targets: the embedded server (`--role embedded`), `cyborg api` + `cyborg
 * conductor`, the sinks child, and the boot storm that loads them.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import type { MessageBus } from '../../src/bus/bus.js'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import { createRabbitMqBus } from '../../src/bus/rabbitmq-bus.js'
import { loadConfig } from '../../src/config/config.js'
import { startCore } from '../../src/main/core.js'
import { migrateDatabase, openConfiguredDatabase } from '../../src/main/database.js'
import { startHttpApi } from '../../src/main/http.js'
import { createLogger } from '../../src/main/logger.js'
import { createPrometheusMetrics } from '../../src/main/metrics/prometheus.js'
import { eventSinks } from '../../src/main/notifications.js'
import { conductorOptions } from '../../src/main/resources.js'
import { createConductorClient } from '../../src/rpc/conductor-rpc.js'
import { testDialects } from '../../test/support/db.js'
import { testBroker, type TestVhost } from '../../test/support/peers/rabbitmq.js'
import {
  NODE,
  freePort,
  printed,
  runCommand,
  startService,
  type RunningService,
} from '../../test/support/service.js'
import { seedStorm } from '../../test/support/storm-inventory.js'
import { providers } from '../storm/boot-storm-targets.js'
import { call } from '../storm/boot-storm-client.js'
export { call, providers }
import { BOUND, type SinkCommand, type FromSinks } from './events-sinks.js'
import { cpuSeconds } from '../support/load.js'
import { serveStormCleanAgent, type StormCleanAgent } from '../storm/storm-clean-agent.js'

export const SELF = fileURLToPath(new URL('../events.ts', import.meta.url))

// ---------------------------------------------------------------------------------------------
// Role `embedded`: what `cyborg up` composes (SQLite, in-process bus), with the storm host seeded
// and, given a transport URL, oslo notifications to it (as bench/storm/boot-storm-embedded.ts, plus sinks).
// Released units are cleaned before reuse (issue 18) by the storm host's stand-in agent on the bus.

export async function serveEmbedded(stateDir: string, port: string, notifyUrl: string | undefined) {
  const config = loadConfig({
    files: [],
    env: {
      CYBORG_DEFAULT__STATE_PATH: stateDir,
      CYBORG_API__PORT: port,
      CYBORG_LOG_LEVEL: 'warn',
      // The storm host is seeded without an agent: no heartbeat keeps its lease, so give it a day.
      CYBORG_DEFAULT__SERVICE_DOWN_TIME: '86400',
      ...(notifyUrl
        ? {
            CYBORG_OSLO_MESSAGING_NOTIFICATIONS__DRIVER: 'messagingv2',
            CYBORG_OSLO_MESSAGING_NOTIFICATIONS__TRANSPORT_URL: notifyUrl,
          }
        : {}),
    },
  })
  const log = createLogger(config, { service: 'bench-events', env: { CYBORG_LOG_LEVEL: 'warn' } })
  const db = await openConfiguredDatabase(config)
  await migrateDatabase(db)
  const sinks = eventSinks(config, log)
  const bus = createInProcessBus()
  const agent = await serveStormCleanAgent(bus, { log })
  const core = await startCore({
    db,
    bus,
    log,
    conductor: conductorOptions(config),
    agent: false,
    eventSinks: sinks.sinks,
  })
  await seedStorm(core.conductorClient)
  // GET /metrics with the process metrics (event-loop lag), as `cyborg up` has.
  const metrics = createPrometheusMetrics()
  const api = await startHttpApi(config, { db, conductor: core.conductorClient, log, metrics })
  process.stdout.write(`ready ${api.url}\n`)
  process.on('SIGTERM', () => {
    void api.app
      .close()
      .then(() => core.stop())
      .then(() => agent.stop())
      .then(() => sinks.close())
      .then(() => db.close())
      .then(() => process.exit(0))
  })
}

// ---------------------------------------------------------------------------------------------
// The bench itself.

export interface Sinks {
  webhookUrl: string
  pid: number | undefined
  ask<T>(command: SinkCommand): Promise<T>
  stop(): Promise<void>
}

export async function startSinks(amqpUrl: string): Promise<Sinks> {
  const child = spawn(NODE, ['--import', 'tsx', SELF, '--role', 'sinks', amqpUrl], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  })
  const waiting = new Map<number, (value: unknown) => void>()
  let seq = 0
  const webhookUrl = await new Promise<string>((resolve, reject) => {
    child.on('message', (m: FromSinks) => {
      if (m.kind === 'ready') resolve(m.webhookUrl)
      else {
        waiting.get(m.seq)?.(m.value)
        waiting.delete(m.seq)
      }
    })
    child.once('exit', (code) => reject(new Error(`the sinks child exited with ${code}`)))
  })
  return {
    webhookUrl,
    pid: child.pid,
    ask<T>(command: SinkCommand) {
      const n = ++seq
      return new Promise<T>((resolve) => {
        waiting.set(n, (v) => resolve(v as T))
        child.send({ ...command, seq: n })
      })
    },
    stop: () => stopChild(child),
  }
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const gone = new Promise((r) => child.once('exit', r))
  child.kill('SIGTERM')
  await gone
}

export interface Target {
  url: string
  rps: string[]
  /** The server processes (for their CPU time). */
  pids: (number | undefined)[]
  /** A separate conductor's /metrics ([metrics] listen), for its event-loop lag. */
  conductorMetrics?: string
  /** Only `on`: the consumer and receiver. */
  sinks: Sinks | undefined
  stop(): Promise<void>
}

export async function registerWebhook(
  api: string,
  url: string,
  eventTypes: string[],
): Promise<void> {
  const res = await fetch(`${api}/v2/webhooks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      url,
      description: 'bench/events.ts',
      ...(eventTypes.length ? { event_types: eventTypes } : {}),
    }),
  })
  if (res.status !== 201) throw new Error(`POST /v2/webhooks: ${res.status} ${await res.text()}`)
}

export async function needBroker() {
  const broker = await testBroker()
  if (broker.skip) throw new Error(`the events bench needs RabbitMQ: ${broker.skip}`)
  return broker
}

export async function startEmbedded(on: boolean, settings: Settings): Promise<Target> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cyborg-events-'))
  let vhost: TestVhost | undefined
  let sinks: Sinks | undefined
  if (on) {
    vhost = await (await needBroker()).createVhost()
    sinks = await startSinks(vhost.url)
  }
  const notify = vhost && settings.onSinks.rabbitmq ? [vhost.url] : []
  const args = [dir, String(await freePort()), ...notify]
  const child = spawn(NODE, ['--import', 'tsx', SELF, '--role', 'embedded', ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      const m = /ready (\S+)/.exec(d.toString())
      if (m) resolve(m[1]!)
    })
    child.once('exit', (code) => reject(new Error(`the embedded server exited with ${code}`)))
  })
  if (sinks && settings.onSinks.webhook)
    await registerWebhook(url, sinks.webhookUrl, settings.webhookEvents)
  return {
    url,
    rps: await providers(url),
    pids: [child.pid],
    sinks,
    async stop() {
      await stopChild(child)
      await sinks?.stop()
      await vhost?.drop()
      await rm(dir, { recursive: true, force: true })
    },
  }
}

export async function startMulti(on: boolean, settings: Settings): Promise<Target> {
  const postgres = (await testDialects()).find((d) => d.name === 'postgres')!
  if (postgres.skip) throw new Error(`the multi target needs PostgreSQL: ${postgres.skip}`)
  const broker = await needBroker()
  const [db, vhost] = await Promise.all([postgres.create(), broker.createVhost()])
  const sinks = on ? await startSinks(vhost.url) : undefined
  const env = {
    CYBORG_DATABASE__CONNECTION: db.url,
    CYBORG_DEFAULT__TRANSPORT_URL: vhost.url,
    CYBORG_LOG_LEVEL: 'warn',
    CYBORG_DEFAULT__SERVICE_DOWN_TIME: '86400',
  }
  const started: RunningService[] = []
  let bus: MessageBus | undefined
  let agent: StormCleanAgent | undefined
  const stop = async () => {
    await Promise.all(started.map((s) => s.stop()))
    await agent?.stop()
    await bus?.close()
    await sinks?.stop()
    await vhost.drop()
    await db.close()
  }
  try {
    const sync = await runCommand(['db', 'sync'], env)
    if (sync.code !== 0) throw new Error(`db sync: ${sync.output}`)
    const metricsPort = await freePort()
    const conductor = await startService({
      command: ['conductor'],
      env: {
        ...env,
        CYBORG_LOG_LEVEL: 'info',
        CYBORG_METRICS__LISTEN: `127.0.0.1:${metricsPort}`,
        ...(on && settings.onSinks.rabbitmq
          ? { CYBORG_OSLO_MESSAGING_NOTIFICATIONS__DRIVER: 'messagingv2' }
          : {}),
      },
      ready: printed(/cyborg conductor is ready/),
    })
    started.push(conductor)
    const api = await startService({ command: ['api'], env })
    started.push(api)
    bus = await createRabbitMqBus({ url: vhost.url })
    await seedStorm(createConductorClient(bus, { timeoutMs: 30_000 }))
    // The conductor cleans released units through the storm host's agent: this stands in for it.
    agent = await serveStormCleanAgent(bus)
    if (sinks && settings.onSinks.webhook)
      await registerWebhook(api.url, sinks.webhookUrl, settings.webhookEvents)
    return {
      url: api.url,
      rps: await providers(api.url),
      pids: [conductor.child.pid, api.child.pid],
      conductorMetrics: `http://127.0.0.1:${metricsPort}/metrics`,
      sinks,
      stop,
    }
  } catch (err) {
    await stop()
    throw err
  }
}

/** RabbitMQ's Erlang VM on this machine, for its CPU time; undefined when not found. */
export function brokerPid(): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'beam.smp') return Number(entry)
    } catch {
      // gone meanwhile
    }
  }
  return undefined
}

export const cpuOf = (pids: readonly (number | undefined)[]) => {
  let total = 0
  for (const pid of pids) {
    const s = cpuSeconds(pid)
    if (s === null) return null
    total += s
  }
  return total
}

export interface Settings {
  seconds: number
  rounds: number
  concurrency: number
  warmup: number
  drainTimeout: number
  webhookEvents: string[]
  /** The sinks of the `on` side (the other one is left noop / unregistered). */
  onSinks: { rabbitmq: boolean; webhook: boolean }
}

/** Whether a webhook registered for `types` (empty: all) gets accelerator.arq.bound. */
export const wantsBound = (types: readonly string[]) =>
  types.length === 0 ||
  types.some((t) => t === BOUND || (t.endsWith('.*') && BOUND.startsWith(t.slice(0, -1))))
