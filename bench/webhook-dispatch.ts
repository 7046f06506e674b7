/**
 * What one webhook delivery costs the process that sends it (issue 16), side by side in one run:
 * 1. **client:** the same signed POST through `fetch` and through node:http with a keep-alive
 *    agent (the dispatcher's poster), 16 at a time: CPU of the sending process per POST.
 * 2. **dispatcher:** `--events` deliveries (4 per ARQ, queued the way a boot storm queues them)
 *    through the webhook sink and dispatcher on SQLite, with `max_in_flight` 1, 16 and 64:
 *    deliveries per second, and the sending process's CPU per delivery (reads, records, HMAC, POST).
 * The receiver (node:http answering 204) runs in a child process, so its CPU is not counted.
 * Prints one JSON document. Usage: npm run bench:webhook-dispatch [-- --events 20000 --rounds 2]
 */
import { fork, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:http'
import { loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import { eventLoopLag, machineFacts } from './support/load.js'
import { testDialects } from '../test/support/db.js'
import { createWebhookDispatcher } from '../src/conductor/outbox/webhook-dispatcher.js'
import { createWebhookPoster } from '../src/conductor/outbox/webhook-post.js'
import { createWebhookSink } from '../src/conductor/outbox/webhook-sink.js'
import type { OutboxEvent } from '../src/conductor/outbox/event-sinks.js'
import { createWebhook } from '../src/db/outbox/webhooks.js'
import { newUuid } from '../src/domain/ids.js'
import { noopLogger } from '../src/domain/logger.js'
import { formatTimestamp, systemClock } from '../src/domain/time.js'
import { newWebhookSecret, webhookSigner } from '../src/domain/webhooks/webhook-signature.js'

if (process.argv[2] === '--role') {
  // The receiver: answers 204 and counts, in its own process.
  let received = 0
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      received++
      res.writeHead(204).end()
    })
  })
  server.listen(0, '127.0.0.1', () => {
    const address = server.address()
    process.send!(typeof address === 'object' && address ? address.port : 0)
  })
  process.on('message', () => process.send!(received))
} else {
  const { values } = parseArgs({
    options: {
      events: { type: 'string', default: '20000' },
      rounds: { type: 'string', default: '2' },
    },
  })
  const total = Number(values.events)
  const loadAtStart = loadavg()[0]!
  const child: ChildProcess = fork(new URL(import.meta.url).pathname, ['--role'], {
    execArgv: process.execArgv,
  })
  const port = await new Promise<number>((r) => child.once('message', (m) => r(m as number)))
  const received = () =>
    new Promise<number>((r) => {
      child.once('message', (m) => r(m as number))
      child.send('count')
    })
  const url = `http://127.0.0.1:${port}/hook`
  const cpuMicros = (since: NodeJS.CpuUsage) => {
    const c = process.cpuUsage(since)
    return c.user + c.system
  }
  const now = () => formatTimestamp(new Date())

  /** Events shaped like a storm's: 64 ARQs at a time, each created, bound, unbound, deleted. */
  const stormEvents = (): OutboxEvent[] => {
    const arqs = Array.from({ length: Math.ceil(total / 4) }, () => newUuid())
    const events: OutboxEvent[] = []
    for (let i = 0; i < arqs.length; i += 64)
      for (const step of ['created', 'bound', 'unbound', 'deleted'])
        for (const arq of arqs.slice(i, i + 64))
          events.push({
            id: events.length + 1,
            uuid: newUuid(),
            eventType: `accelerator.arq.${step}`,
            priority: 'INFO',
            resourceType: 'arq',
            resourceUuid: arq,
            projectId: 'p1',
            payload: { 'cyborg_object.name': 'ArqPayload', 'cyborg_object.data': { uuid: arq } },
            createdAt: now(),
          })
    return events.slice(0, total)
  }

  const client = async (how: 'fetch' | 'node:http') => {
    const sign = webhookSigner(newWebhookSecret())
    const body = JSON.stringify(stormEvents()[0])
    const poster = createWebhookPoster(10_000)
    const post =
      how === 'fetch'
        ? async (headers: Record<string, string>) => {
            const res = await fetch(url, { method: 'POST', headers, body, redirect: 'manual' })
            await res.body?.cancel()
          }
        : (headers: Record<string, string>) => poster.post(url, headers, body)
    const n = Math.min(total, 10_000)
    let next = 0
    const run = () =>
      Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next++ < n) await post(sign(newUuid(), new Date(), body))
        }),
      )
    await run() // warm-up
    next = 0
    const cpu = process.cpuUsage()
    const start = performance.now()
    await run()
    const seconds = (performance.now() - start) / 1000
    poster.close()
    return {
      postsPerSecond: Math.round(n / seconds),
      cpuMicrosPerPost: Math.round(cpuMicros(cpu) / n),
    }
  }

  const dispatch = async (maxInFlight: number) => {
    const [sqlite] = await testDialects()
    const db = await sqlite!.create()
    try {
      const createdAt = now()
      await createWebhook(db.db, {
        uuid: newUuid(),
        url,
        secret: newWebhookSecret(),
        eventTypes: [],
        projectIds: [],
        description: null,
        enabled: true,
        createdAt,
      })
      const events = stormEvents()
      const sink = createWebhookSink({ db, now })
      for (let i = 0; i < events.length; i += 100) await sink.deliver(events.slice(i, i + 100))
      const before = await received()
      const dispatcher = createWebhookDispatcher(
        { db, log: noopLogger, clock: systemClock },
        { maxInFlight, pollIntervalMs: 50 },
      )
      const cpu = process.cpuUsage()
      const start = performance.now()
      dispatcher.start()
      await dispatcher.idle()
      const seconds = (performance.now() - start) / 1000
      const micros = cpuMicros(cpu)
      await dispatcher.stop()
      const got = (await received()) - before
      if (got !== events.length) throw new Error(`received ${got} of ${events.length}`)
      return {
        maxInFlight,
        deliveriesPerSecond: Math.round(events.length / seconds),
        cpuMicrosPerDelivery: Math.round(micros / events.length),
      }
    } finally {
      await db.close()
    }
  }

  const rounds = []
  const lag = eventLoopLag()
  for (let round = 1; round <= Number(values.rounds); round++) {
    rounds.push({
      round,
      client: { fetch: await client('fetch'), nodeHttp: await client('node:http') },
      dispatcher: [await dispatch(1), await dispatch(16), await dispatch(64)],
    })
  }
  child.kill()
  const machine = { ...machineFacts(loadAtStart), loadAverage1mAtEnd: loadavg()[0] }
  const settings = { events: total, rounds: Number(values.rounds) }
  const eventLoopLagFigures = {
    benchmarkProcess: lag(),
    receiver: 'the receiver runs in a forked child that serves no /metrics: not measured',
  }
  console.log(
    JSON.stringify(
      {
        benchmark: 'webhook-dispatch',
        machine,
        settings,
        rounds,
        eventLoopLag: eventLoopLagFigures,
      },
      null,
      1,
    ),
  )
}
