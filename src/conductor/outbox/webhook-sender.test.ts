/**
 * The sliding window on its own, with attempts the test answers by hand: at most maxInFlight at
 * once, a slot refilled as soon as it frees, one resource at a time, and a failure stops what
 * follows.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { PendingDelivery } from '../../db/outbox/webhook-deliveries.js'
import type { PostResult } from './webhook-post.js'
import { sendBatch, type Queued } from './webhook-sender.js'

const NOW = '2026-01-01T00:00:01.000Z'
let ids = 0
const queued = (resource: string): Queued => {
  const d: PendingDelivery = {
    id: ++ids,
    eventUuid: `e${ids}`,
    body: '{}',
    attempts: 0,
    nextAttemptAt: NOW,
  }
  return { d, resource }
}

/** Attempts that wait until the test answers them, in the order they started. */
function manual() {
  const started: { q: Queued; answer: (r: PostResult) => void }[] = []
  const post = (q: Queued) => new Promise<PostResult>((answer) => started.push({ q, answer }))
  const ok = (i: number) => started[i]!.answer({ status: 204, error: null })
  const fail = (i: number) => started[i]!.answer({ status: 500, error: 'HTTP 500' })
  const names = () => started.map((s) => s.q.d.eventUuid)
  return { started, post, ok, fail, names }
}
const tick = () => new Promise((r) => setImmediate(r))

await test('a freed slot takes the next delivery whose resource is not in flight', async () => {
  const queue = [queued('a'), queued('a'), queued('b'), queued('c'), queued('d')]
  const [a1, a2, b, c, d] = queue.map((q) => q.d.eventUuid)
  const m = manual()
  const done = sendBatch(queue, { maxInFlight: 2, post: m.post })
  assert.deepEqual(m.names(), [a1, b], 'two slots: a1, then b (a2 waits for a1)')
  m.ok(1)
  await tick()
  assert.deepEqual(m.names(), [a1, b, c], "b's slot goes to c; a2 still waits")
  m.ok(0)
  await tick()
  assert.deepEqual(m.names(), [a1, b, c, a2], 'a1 done: a2 goes before d')
  m.ok(2)
  await tick()
  m.ok(3)
  await tick()
  m.ok(4)
  const outcome = await done
  assert.deepEqual(m.names(), [a1, b, c, a2, d])
  assert.deepEqual(outcome.delivered.map((x) => x.deliveryId).length, 5)
  assert.deepEqual([outcome.failed, outcome.aborted, outcome.unsent], [[], false, 0])
})

await test('a failure stops new starts; those in flight finish', async () => {
  const queue = [queued('a'), queued('b'), queued('c'), queued('d')]
  const m = manual()
  const done = sendBatch(queue, { maxInFlight: 2, post: m.post })
  m.fail(0)
  await tick()
  assert.equal(m.started.length, 2, 'nothing new after the failure')
  m.ok(1)
  const outcome = await done
  assert.deepEqual(
    outcome.failed.map((f) => f.d.id),
    [queue[0]!.d.id],
  )
  assert.deepEqual(
    outcome.delivered.map((x) => x.deliveryId),
    [queue[1]!.d.id],
  )
  assert.equal(outcome.unsent, 2)
})

await test('an attempt that throws is a failed attempt, not a lost batch', async () => {
  const outcome = await sendBatch([queued('a')], {
    maxInFlight: 1,
    post: () => Promise.reject(new Error('boom')),
  })
  assert.match(outcome.failed[0]!.result.error!, /boom/)
})
