/**
 * The event relay on every database: it delivers the outbox in id order, at least once; a sink
 * that fails and then recovers gets everything (the failed batch again); a commit that wrote
 * events wakes it; sent events past retention are deleted; two relays (two conductors, two
 * connections on PostgreSQL and MariaDB) publishing while events are written never deliver a
 * resource's events out of order, never skip one and never deliver one twice; a relay that dies
 * after delivering, before stamping, leaves the events to the next relay, which delivers the same
 * event ids again.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { testDialects } from '../../../test/support/db.js'
import { killTransactionHolder } from '../../../test/support/kill-lock-holder.js'
import { openDatabase, type DatabaseHandle } from '../../db/core/connection.js'
import { hasUnsentEvents, insertEvents, listEvents } from '../../db/outbox/events.js'
import { createGroupCommitter } from '../../db/core/group-commit.js'
import { agentEvent, type NewEvent } from '../../domain/events.js'
import { noopLogger } from '../../domain/logger.js'
import { systemClock } from '../../domain/time.js'
import { createEventRelay, wakingCommitter, type EventRelayOptions } from './event-relay.js'
import type { EventSink, OutboxEvent } from './event-sinks.js'

const ev = (host: string, n: number): NewEvent =>
  agentEvent(
    'lease_lost',
    { hostname: host, binary: 'cyborg-agent', reason: `${n}`, devices: [] },
    '2026-11-25T06:00:00.000000+00:00',
  )

/** A sink that records each batch; `fail(batch)` may refuse one. */
function recorder(
  name: string,
  fail: (batch: readonly OutboxEvent[], call: number) => Promise<void> | void = () => {},
) {
  const batches: OutboxEvent[][] = []
  let calls = 0
  const sink: EventSink & { batches: OutboxEvent[][] } = {
    name,
    batches,
    async deliver(events) {
      batches.push([...events])
      await fail(events, ++calls)
    },
  }
  return sink
}

const relayOf = (db: DatabaseHandle, sinks: EventSink[], options: EventRelayOptions = {}) =>
  createEventRelay(
    { db, sinks, log: noopLogger, clock: systemClock },
    { pollIntervalMs: 10, retry: { initialMs: 5, maxMs: 40 }, ...options },
  )

const until = async (check: () => Promise<boolean>, what: string, ms = 10_000) => {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

/** First deliveries, in the order they came: every event once, with its id. */
const firstSeen = (batches: readonly OutboxEvent[][]) => {
  const seen = new Map<string, OutboxEvent>()
  for (const e of batches.flat()) if (!seen.has(e.uuid)) seen.set(e.uuid, e)
  return [...seen.values()]
}

for (const dialect of await testDialects()) {
  const { skip } = dialect

  await test(
    `the relay delivers in order, at least once, on ${dialect.name}`,
    { skip },
    async () => {
      const db = await dialect.create()
      const good = recorder('good')
      const flaky = recorder('flaky', (_, call) => {
        if (call <= 2) throw new Error('broker down')
      })
      const relay = relayOf(db, [good, flaky], { batchSize: 100, retentionHours: 0 })
      const committer = wakingCommitter(
        createGroupCommitter(db, { intervalMs: 0, maxBatch: 8 }),
        relay.wake,
      )
      try {
        const written = Array.from({ length: 250 }, (_, i) => ev(`h${i % 3}`, i))
        for (let i = 0; i < written.length; i += 50)
          await db.db.transaction().execute((trx) => insertEvents(trx, written.slice(i, i + 50)))
        assert.equal(await relay.drain(), 0, 'the flaky sink refused the first batch')
        relay.start()
        await until(async () => !(await hasUnsentEvents(db.db)), 'all sent')
        for (const sink of [good, flaky]) {
          assert.deepEqual(
            firstSeen(sink.batches).map((e) => e.uuid),
            written.map((e) => e.uuid),
            `${sink.name} got every event, in id order`,
          )
          for (const batch of sink.batches)
            assert.ok(batch.every((e, i) => i === 0 || batch[i - 1]!.id < e.id))
        }
        assert.equal(flaky.batches.length, 5, 'two refusals, then three batches')
        assert.deepEqual(flaky.batches[0], flaky.batches[2], 'the refused batch came again whole')
        assert.equal(good.batches.length, 5, 'the good sink got the retried batch again too')

        // A commit that wrote events wakes the relay (its poll is an hour away now).
        await relay.stop()
        const woken = relayOf(db, [good], { pollIntervalMs: 3_600_000, retentionHours: 0 })
        const waking = wakingCommitter(
          createGroupCommitter(db, { intervalMs: 0, maxBatch: 8 }),
          woken.wake,
        )
        woken.start()
        const late = ev('h9', 999)
        await waking.run((trx) => insertEvents(trx, [late]))
        await until(async () => good.batches.flat().some((e) => e.uuid === late.uuid), 'woken')
        await waking.close()
        await woken.stop()

        // Retention 0: the next purge deletes sent events.
        const purging = relayOf(db, [], { retentionHours: 0, purgeIntervalMs: 20 })
        purging.start()
        await until(async () => (await listEvents(db.db)).length === 0, 'purged')
        await purging.stop()
      } finally {
        await relay.stop()
        await committer.close()
        await db.close()
      }
    },
  )

  await test(`two relays keep each resource's order on ${dialect.name}`, { skip }, async () => {
    const db = await dialect.create()
    const other = dialect.name === 'sqlite' ? db : await openDatabase(db.url)
    const delivered: { relay: string; event: OutboxEvent }[] = []
    const sinkOf = (relay: string): EventSink => ({
      name: relay,
      async deliver(events) {
        for (const event of events) delivered.push({ relay, event })
        await new Promise((r) => setTimeout(r, Math.random() * 3))
      },
    })
    const relays = [relayOf(db, [sinkOf('a')]), relayOf(other, [sinkOf('b')])]
    const committers = [db, other].map((h) =>
      createGroupCommitter(h, { intervalMs: 0, maxBatch: 8 }),
    )
    try {
      relays.forEach((r) => r.start())
      // One writer per resource, each change committed before the next (as a row lock orders
      // a resource's changes); the resources' writers run at once, through both conductors.
      const written = new Map<string, string[]>()
      await Promise.all(
        ['r0', 'r1', 'r2', 'r3'].map(async (resource, w) => {
          for (let i = 0; i < 30; i++) {
            const batch = [ev(resource, 2 * i), ev(resource, 2 * i + 1)]
            await committers[(w + i) % 2]!.run((trx) => insertEvents(trx, batch))
            written.set(resource, [...(written.get(resource) ?? []), ...batch.map((e) => e.uuid)])
            if (i % 5 === 0) relays[i % 2]!.wake()
          }
        }),
      )
      await until(async () => !(await hasUnsentEvents(db.db)), 'all sent')
      await Promise.all(relays.map((r) => r.stop()))
      const uuids = delivered.map((d) => d.event.uuid)
      assert.equal(new Set(uuids).size, uuids.length, 'no event delivered twice')
      assert.equal(uuids.length, 240, 'none skipped')
      for (const [resource, expected] of written) {
        const got = delivered.filter((d) => d.event.resourceUuid === resource)
        assert.deepEqual(
          got.map((d) => d.event.uuid),
          expected,
          `${resource}: in the order written`,
        )
      }
    } finally {
      await Promise.all(relays.map((r) => r.stop()))
      for (const c of committers) await c.close()
      if (other !== db) await other.close()
      await db.close()
    }
  })

  await test(
    `a relay dying before the stamp leaves the events to the next, on ${dialect.name}`,
    { skip },
    async () => {
      const db = await dialect.create()
      // The first conductor's relay has a connection of its own, which dies with it.
      const doomed = dialect.name === 'sqlite' ? db : await openDatabase(db.url)
      try {
        const written = [ev('h1', 1), ev('h1', 2), ev('h2', 3)]
        await db.db.transaction().execute((trx) => insertEvents(trx, written))
        const first = recorder('first', async () => {
          // Delivered; now the process dies: its connection goes, the stamp with it. (SQLite
          // runs in this process only: there the stand-in is a failure after delivery.)
          if (dialect.name === 'sqlite') throw new Error('killed')
          await killTransactionHolder(db)
        })
        const dying = relayOf(doomed, [first], { retry: { initialMs: 3_600_000 } })
        await dying.drain()
        await dying.stop()
        assert.deepEqual(
          first.batches.flat().map((e) => e.uuid),
          written.map((e) => e.uuid),
        )
        assert.equal(await hasUnsentEvents(db.db), true, 'not stamped')

        // After the restart (a new connection), the same events, with the same ids.
        const next = recorder('next')
        const restarted = relayOf(db, [next])
        assert.equal(await restarted.drain(), 3)
        await restarted.stop()
        assert.deepEqual(next.batches, first.batches)
        assert.equal(await hasUnsentEvents(db.db), false)
      } finally {
        if (doomed !== db) await doomed.close()
        await db.close()
      }
    },
  )
}
