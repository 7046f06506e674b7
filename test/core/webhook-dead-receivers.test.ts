/**
 * Issue 27, defect 1: dead webhook receivers must not stall the process. Ten endpoints point at
 * closed loopback ports with 300 events queued each, next to one receiver that answers; the
 * dispatcher has fewer slots than there are dead endpoints. What a dead receiver may cost is its
 * own back-off slot: one attempt at a time per back-off period, reading one row for it. So the
 * rows the dispatcher reads and the queries it runs while every receiver is down stay bounded by
 * the back-off schedule, not by the backlog (before the fix it read the 200 oldest rows of each
 * endpoint again and again, spinning while its head delivery was not yet due). The live receiver
 * gets every event in order meanwhile, and once the dead ones come back each gets all 300, in
 * order, once. The claim query reads the delivery queue through its index only.
 *
 * The counts come from a Kysely plugin on the dispatcher's own handle (every query it runs, every
 * row it is answered), so they do not depend on how fast this machine is.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import { CompiledQuery, type KyselyPlugin } from 'kysely'
import { createWebhookDispatcher } from '../../src/conductor/outbox/webhook-dispatcher.js'
import { createWebhookSink } from '../../src/conductor/outbox/webhook-sink.js'
import type { OutboxEvent } from '../../src/conductor/outbox/event-sinks.js'
import type { DatabaseHandle } from '../../src/db/core/connection.js'
import { claimDueWebhooks } from '../../src/db/outbox/webhook-claims.js'
import { createWebhook } from '../../src/db/outbox/webhooks.js'
import { getWebhookId } from '../../src/db/reads/webhook-reads.js'
import { newUuid } from '../../src/domain/ids.js'
import { noopLogger } from '../../src/domain/logger.js'
import { formatTimestamp, systemClock } from '../../src/domain/time.js'
import { newWebhookSecret } from '../../src/domain/webhooks/webhook-signature.js'
import { testDialects } from '../support/db.js'
import { startReceiver, waitFor, type Receiver } from '../support/webhook-receiver.js'

const now = () => formatTimestamp(new Date())
const DEAD = 10
const EVENTS = 300

/** A loopback port nothing listens on (now). */
async function closedPort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
  const port = (s.address() as { port: number }).port
  await new Promise((resolve) => s.close(resolve))
  return port
}

/** The dispatcher's handle, counting every query it runs and every row it is answered. */
function metered(handle: DatabaseHandle) {
  const meter = { queries: 0, rows: 0 }
  const plugin: KyselyPlugin = {
    transformQuery: (args) => {
      meter.queries++
      return args.node
    },
    transformResult: (args) => {
      meter.rows += args.result.rows.length
      return Promise.resolve(args.result)
    },
  }
  return { meter, handle: { ...handle, db: handle.db.withPlugin(plugin) } }
}

let position = 0
const event = (): OutboxEvent => ({
  id: ++position,
  uuid: newUuid(),
  eventType: 'accelerator.arq.bound',
  priority: 'INFO',
  resourceType: 'arq',
  resourceUuid: newUuid(),
  projectId: 'p1',
  payload: { 'cyborg_object.name': 'ArqPayload', 'cyborg_object.data': { n: position } },
  createdAt: now(),
})

async function register(db: DatabaseHandle, url: string, secret: string) {
  const uuid = newUuid()
  await createWebhook(db.db, {
    uuid,
    url,
    secret,
    eventTypes: [],
    projectIds: [],
    description: null,
    enabled: true,
    createdAt: now(),
  })
  return getWebhookId(db.db, uuid)
}

const [sqlite] = await testDialects()

await test('dead receivers cost their own back-off slot, bounded reads, and nothing else', async () => {
  const db = await sqlite!.create()
  const { meter, handle } = metered(db)
  const live = await startReceiver()
  const dead = await Promise.all(
    Array.from({ length: DEAD }, async () => ({
      port: await closedPort(),
      secret: newWebhookSecret(),
    })),
  )
  const dispatcher = createWebhookDispatcher(
    { db: handle, log: noopLogger, clock: systemClock, random: () => 0.5 },
    // Fewer slots than dead endpoints; nothing goes dead in this test (max_attempts is high).
    { concurrency: 2, backoffMs: 200, maxBackoffMs: 1000, maxAttempts: 1000, pollIntervalMs: 50 },
  )
  const back: Receiver[] = []
  try {
    live.secret = newWebhookSecret()
    await register(db, live.url, live.secret)
    for (const d of dead) await register(db, `http://127.0.0.1:${d.port}/hook`, d.secret)
    const events = Array.from({ length: EVENTS }, event)
    const sink = createWebhookSink({ db, now, onQueued: dispatcher.wake })
    for (let i = 0; i < events.length; i += 50) await sink.deliver(events.slice(i, i + 50))
    dispatcher.start()
    await waitFor(() => live.accepted().length === EVENTS, 'the live receiver to get every event')
    assert.deepEqual(
      live.accepted().map((r) => r.id),
      events.map((e) => e.uuid),
      'the live receiver got every event, in order, once, next to ten dead ones',
    )

    // Three seconds with every other receiver down: with a back-off of 0.5 × 200 ms × 2^(n-1),
    // capped at 1 s, that is at most about 6 attempts per endpoint after its first window.
    const before = { ...meter }
    await new Promise((resolve) => setTimeout(resolve, 3000))
    const rows = meter.rows - before.rows
    const queries = meter.queries - before.queries
    assert.ok(rows <= DEAD * 10 * 6, `rows read while dead: ${rows} (one row per probe)`)
    assert.ok(queries <= DEAD * 10 * 12, `queries while dead: ${queries}`)
    const attempted = await db.db
      .selectFrom('webhook_deliveries')
      .select([(eb) => eb.fn.countAll<number>().as('n')])
      .where('attempts', '>', 1)
      .executeTakeFirstOrThrow()
    assert.ok(
      Number(attempted.n) <= DEAD,
      `only each dead endpoint's first queued delivery was tried again (${attempted.n} were)`,
    )

    // The receivers come back where they were: each gets all its events, in order, once.
    for (const d of dead) {
      const r = await startReceiver({ port: d.port })
      r.secret = d.secret
      back.push(r)
    }
    await waitFor(
      () => back.every((r) => new Set(r.accepted().map((x) => x.id)).size === EVENTS),
      'every event delivered once the receivers are back',
      60_000,
    )
    await dispatcher.idle()
    for (const r of back) {
      assert.deepEqual(
        r.accepted().map((x) => x.id),
        events.map((e) => e.uuid),
      )
      assert.deepEqual(
        r.received.filter((x) => x.invalid !== null),
        [],
      )
    }
  } finally {
    await dispatcher.stop()
    await Promise.all([live, ...back].map((r) => r.close()))
    await db.close()
  }
})

await test('the claim reads the delivery queue through its index, never the whole backlog', async () => {
  const db = await sqlite!.create()
  try {
    // Every query the claim runs, compiled as it is sent, then explained with its parameters.
    const compiled: CompiledQuery[] = []
    const spy: KyselyPlugin = {
      transformQuery: (args) => {
        compiled.push(db.db.getExecutor().compileQuery(args.node, args.queryId))
        return args.node
      },
      transformResult: (args) => Promise.resolve(args.result),
    }
    const at = now()
    await claimDueWebhooks(
      { ...db, db: db.db.withPlugin(spy) },
      { token: 't', now: at, until: at, limit: 8 },
    )
    const plans: string[] = []
    for (const q of compiled.filter((c) => c.sql.includes('webhook_deliveries'))) {
      const plan = await db.db.executeQuery<{ detail: string }>(
        CompiledQuery.raw(`EXPLAIN QUERY PLAN ${q.sql}`, [...q.parameters]),
      )
      plans.push(...plan.rows.map((r) => r.detail))
    }
    assert.ok(plans.length > 0, 'the claim reads the delivery queue')
    assert.deepEqual(
      plans.filter((p) => p.startsWith('SCAN') && !/^SCAN w\b|^SCAN webhooks\b/.test(p)),
      [],
      `only the endpoints are scanned, the deliveries searched by index: ${plans.join('; ')}`,
    )
  } finally {
    await db.close()
  }
})
