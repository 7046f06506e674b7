/**
 * The webhook sink and dispatcher against real receivers (node:http on 127.0.0.1) that verify
 * every signature and timestamp with their own verifier (test/support/webhook-receiver.ts):
 * filters pick the endpoints; a receiver that fails five times gets every event, in order, with
 * one webhook-id per event across its retries; one that never answers 2xx gets dead letters after
 * max_attempts; two dispatchers on one database (two connections on PostgreSQL and MariaDB) never
 * send one delivery twice nor two at once to one endpoint.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { testDialects } from '../../../test/support/db.js'
import {
  startReceiver,
  verifyStandardWebhook,
  waitFor,
  type Receiver,
} from '../../../test/support/webhook-receiver.js'
import { openDatabase, type DatabaseHandle } from '../../db/core/connection.js'
import { listWebhookDeliveries } from '../../db/reads/webhook-delivery-reads.js'
import { createWebhook } from '../../db/outbox/webhooks.js'
import { getWebhookId } from '../../db/reads/webhook-reads.js'
import { newUuid } from '../../domain/ids.js'
import { noopLogger } from '../../domain/logger.js'
import { formatTimestamp, systemClock } from '../../domain/time.js'
import { newWebhookSecret, webhookHeaders } from '../../domain/webhooks/webhook-signature.js'
import type { OutboxEvent } from './event-sinks.js'
import { createWebhookDispatcher, type WebhookDispatcherOptions } from './webhook-dispatcher.js'
import { createWebhookSink } from './webhook-sink.js'

const now = () => formatTimestamp(new Date())
const FAST: WebhookDispatcherOptions = {
  timeoutMs: 2000,
  backoffMs: 20,
  maxBackoffMs: 80,
  pollIntervalMs: 25,
  maxInFlight: 1,
}

let position = 0
function event(
  eventType: string,
  projectId: string | null = null,
  resourceUuid = newUuid(),
): OutboxEvent {
  return {
    id: ++position,
    uuid: newUuid(),
    eventType,
    priority: 'INFO',
    resourceType: eventType.split('.')[1]!,
    resourceUuid,
    projectId,
    payload: { 'cyborg_object.name': 'ArqPayload', 'cyborg_object.data': { n: position } },
    createdAt: now(),
  }
}

/** Registers `receiver` with a fresh secret; resolves with the row id. */
async function register(
  db: DatabaseHandle,
  receiver: Receiver,
  filters: { eventTypes?: string[]; projectIds?: string[] } = {},
) {
  receiver.secret = newWebhookSecret()
  const uuid = newUuid()
  await createWebhook(db.db, {
    uuid,
    url: receiver.url,
    secret: receiver.secret,
    eventTypes: filters.eventTypes ?? [],
    projectIds: filters.projectIds ?? [],
    description: null,
    enabled: true,
    createdAt: now(),
  })
  return getWebhookId(db.db, uuid)
}

const assertVerified = (r: Receiver) =>
  assert.deepEqual(
    r.received.filter((x) => x.invalid !== null).map((x) => x.invalid),
    [],
    'every request verifies',
  )

const [sqlite] = await testDialects()

await test("the test's verifier accepts the signer's headers, and nothing else", () => {
  const secret = newWebhookSecret()
  const at = new Date()
  const body = '{"type":"accelerator.arq.bound"}'
  const headers = webhookHeaders(secret, 'evt-1', at, body)
  const nowS = Math.floor(at.getTime() / 1000)
  assert.equal(verifyStandardWebhook(secret, headers, body, nowS), null)
  const rotated = { ...headers, 'webhook-signature': `v1,AAAA ${headers['webhook-signature']}` }
  assert.equal(verifyStandardWebhook(secret, rotated, body, nowS), null, 'any one of several')
  assert.match(verifyStandardWebhook(secret, headers, `${body} `, nowS)!, /no v1 signature/)
  assert.match(verifyStandardWebhook(newWebhookSecret(), headers, body, nowS)!, /no v1/)
  const otherId = { ...headers, 'webhook-id': 'evt-2' }
  assert.match(verifyStandardWebhook(secret, otherId, body, nowS)!, /no v1/)
  assert.match(verifyStandardWebhook(secret, headers, body, nowS + 301)!, /more than 300 s/)
  assert.match(
    verifyStandardWebhook(secret, { ...headers, 'webhook-id': undefined }, body)!,
    /missing/,
  )
})

await test('filters, signatures, retries in order, dead letters', async () => {
  const db = await sqlite!.create()
  const all = await startReceiver()
  const arqs = await startReceiver({ answer: (n) => (n < 5 ? 500 : 200) })
  const project = await startReceiver()
  const broken = await startReceiver({ answer: () => 503 })
  const dispatcher = createWebhookDispatcher(
    { db, log: noopLogger, clock: systemClock },
    { ...FAST, maxAttempts: 8, concurrency: 4 },
  )
  try {
    await register(db, all)
    await register(db, arqs, { eventTypes: ['accelerator.arq.*'] })
    await register(db, project, { projectIds: ['p1'] })
    const brokenId = await register(db, broken, { eventTypes: ['accelerator.device.added'] })
    const sink = createWebhookSink({ db, now, onQueued: dispatcher.wake })
    const events = [
      event('accelerator.device.added'),
      ...Array.from({ length: 10 }, (_, i) => event('accelerator.arq.bound', i % 2 ? 'p1' : 'p2')),
      event('accelerator.device.added'),
    ]
    await sink.deliver(events.slice(0, 6))
    await sink.deliver(events.slice(6))
    await sink.deliver(events.slice(3, 8)) // the relay may hand events again: queued once
    dispatcher.start()
    const uuids = (filter: (e: OutboxEvent) => boolean) => events.filter(filter).map((e) => e.uuid)
    await waitFor(() => arqs.accepted().length === 10, 'the ARQ receiver to recover')
    await dispatcher.idle()
    assert.deepEqual(
      all.accepted().map((r) => r.id),
      uuids(() => true),
      'every event, in order, once',
    )
    assert.deepEqual(
      arqs.accepted().map((r) => r.id),
      uuids((e) => e.eventType === 'accelerator.arq.bound'),
      'in order through the failures',
    )
    assert.deepEqual(
      arqs.received.slice(0, 6).map((r) => [r.id, r.status]),
      [500, 500, 500, 500, 500, 200].map((s) => [events[1]!.uuid, s]),
      'the first event is retried, with the same webhook-id, until it gets through',
    )
    assert.deepEqual(
      project.accepted().map((r) => r.id),
      uuids((e) => e.projectId === 'p1'),
      'only project p1',
    )
    const body = project.accepted()[0]!.body
    const first = events.find((e) => e.projectId === 'p1')!
    assert.deepEqual(body, {
      type: 'accelerator.arq.bound',
      timestamp: first.createdAt,
      data: {
        id: first.uuid,
        resource_type: 'arq',
        resource_uuid: first.resourceUuid,
        project_id: 'p1',
        priority: 'INFO',
        payload: first.payload,
      },
    })
    for (const r of [all, arqs, project]) assertVerified(r)

    // The broken receiver: every attempt fails; after 8 the delivery is dead and the next goes.
    await waitFor(async () => {
      const dead = await listWebhookDeliveries(db.db, brokenId, { state: 'dead' })
      return dead.length === 2
    }, 'two dead letters')
    const dead = await listWebhookDeliveries(db.db, brokenId)
    assert.deepEqual(
      dead.map((d) => [d.eventUuid, d.state, d.attempts, d.lastStatus, d.lastError]),
      [events[0]!, events[11]!].map((e) => [e.uuid, 'dead', 8, 503, 'HTTP 503']),
    )
    assert.equal(broken.received.length, 16)
    assert.deepEqual(
      broken.received.map((r) => r.id),
      [...Array(8).fill(events[0]!.uuid), ...Array(8).fill(events[11]!.uuid)],
    )
    assertVerified(broken)
  } finally {
    await dispatcher.stop()
    await Promise.all([all, arqs, project, broken].map((r) => r.close()))
    await db.close()
  }
})

await test('up to max_in_flight at once, one per resource, each resource in order through failures', async () => {
  const db = await sqlite!.create()
  // Every seventh request fails; answers take 5 ms, so runs overlap at the receiver.
  const receiver = await startReceiver({ answer: (n) => (n % 7 === 3 ? 500 : 200), delayMs: 5 })
  const dispatcher = createWebhookDispatcher(
    { db, log: noopLogger, clock: systemClock },
    { ...FAST, maxInFlight: 6 },
  )
  try {
    await register(db, receiver)
    const resources = Array.from({ length: 4 }, () => newUuid())
    const events = Array.from({ length: 80 }, (_, i) =>
      event('accelerator.arq.bound', null, resources[i < 60 ? i % 4 : 0]!),
    )
    await createWebhookSink({ db, now, onQueued: dispatcher.wake }).deliver(events)
    dispatcher.start()
    await waitFor(() => receiver.accepted().length === events.length, 'every event accepted')
    await dispatcher.idle()
    for (const resource of resources) {
      const expected = events.filter((e) => e.resourceUuid === resource).map((e) => e.uuid)
      const arrivals = receiver.received.filter((r) => r.body.data.resource_uuid === resource)
      let next = 0
      for (const r of arrivals) {
        assert.equal(r.id, expected[next], `${resource}: event ${next} (or its retry) arrives next`)
        if (r.status < 300) next++
      }
      assert.equal(next, expected.length, `${resource}: every event accepted once`)
    }
    const peak = Math.max(...receiver.received.map((r) => r.concurrent))
    assert.ok(peak > 1 && peak <= 6, `requests overlapped, at most 6 at once (peak ${peak})`)
    assert.ok(
      receiver.received.some((r) => r.status === 500),
      'some attempts failed',
    )
    assertVerified(receiver)
  } finally {
    await dispatcher.stop()
    await receiver.close()
    await db.close()
  }
})

await test('a receiver that does not answer in time, or refuses connections, fails the attempt', async () => {
  const db = await sqlite!.create()
  const slow = await startReceiver({ delayMs: 500 })
  const dispatcher = createWebhookDispatcher(
    { db, log: noopLogger, clock: systemClock },
    { ...FAST, timeoutMs: 100, maxAttempts: 2 },
  )
  try {
    const slowId = await register(db, slow)
    const closed = await startReceiver()
    const refusedId = await register(db, closed)
    await closed.close()
    const sink = createWebhookSink({ db, now, onQueued: dispatcher.wake })
    await sink.deliver([event('accelerator.device.added')])
    dispatcher.start()
    await waitFor(async () => {
      const a = await listWebhookDeliveries(db.db, slowId, { state: 'dead' })
      const b = await listWebhookDeliveries(db.db, refusedId, { state: 'dead' })
      return a.length + b.length === 2
    }, 'both dead')
    const [timedOut] = await listWebhookDeliveries(db.db, slowId)
    assert.deepEqual([timedOut!.lastStatus, timedOut!.lastError], [null, 'no answer within 0.1 s'])
    const [refused] = await listWebhookDeliveries(db.db, refusedId)
    assert.deepEqual([refused!.lastStatus, refused!.lastError], [null, 'no answer: ECONNREFUSED'])
  } finally {
    await dispatcher.stop()
    await slow.close()
    await db.close()
  }
})

for (const dialect of await testDialects()) {
  await test(
    `two dispatchers never send one delivery twice on ${dialect.name}`,
    { skip: dialect.skip },
    async () => {
      const db = await dialect.create()
      const other = dialect.name === 'sqlite' ? db : await openDatabase(db.url, { poolSize: 4 })
      const receivers = await Promise.all([1, 2, 3].map(() => startReceiver({ delayMs: 3 })))
      // Each dispatcher's claim tokens, to see that both took turns.
      const tokens = [new Set<string>(), new Set<string>()]
      const dispatchers = [db, other].map((handle, i) =>
        createWebhookDispatcher(
          {
            db: handle,
            log: noopLogger,
            clock: systemClock,
            uuid: () => {
              const token = newUuid()
              tokens[i]!.add(token)
              return token
            },
          },
          { ...FAST, concurrency: 2, turnSize: 5 },
        ),
      )
      try {
        for (const r of receivers) await register(db, r)
        const events = Array.from({ length: 60 }, () => event('accelerator.arq.created'))
        const sink = createWebhookSink({ db, now })
        for (let i = 0; i < events.length; i += 20) await sink.deliver(events.slice(i, i + 20))
        for (const d of dispatchers) d.start()
        const holders = new Set<string>()
        await waitFor(
          async () => {
            const rows = await db.db.selectFrom('webhooks').select('claimed_by').execute()
            for (const r of rows) if (r.claimed_by) holders.add(r.claimed_by)
            return receivers.every((r) => r.received.length >= events.length)
          },
          'every delivery',
          30_000,
        )
        const turns = tokens.map((mine) => [...holders].filter((h) => mine.has(h)).length)
        assert.ok(
          turns.every((n) => n > 0),
          `both dispatchers held endpoints: ${turns.join(' and ')} claims seen`,
        )
        await Promise.all(dispatchers.map((d) => d.idle()))
        for (const r of receivers) {
          assert.deepEqual(
            r.received.map((x) => x.id),
            events.map((e) => e.uuid),
            'each once, in order',
          )
          assert.deepEqual(
            r.received.filter((x) => x.concurrent > 1),
            [],
            'one at a time per endpoint',
          )
          assertVerified(r)
        }
      } finally {
        await Promise.all(dispatchers.map((d) => d.stop()))
        await Promise.all(receivers.map((r) => r.close()))
        if (other !== db) await other.close()
        await db.close()
      }
    },
  )
}
