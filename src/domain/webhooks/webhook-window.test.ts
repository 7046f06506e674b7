/** Which queued deliveries go out together: due, one per resource, each its resource's first. */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { deliveryResource, nextRun } from './webhook-window.js'

const body = (type: string, uuid: string) =>
  JSON.stringify({ type: 'x', data: { resource_type: type, resource_uuid: uuid } })
const EARLY = '2026-01-01T00:00:00.000Z'
const NOW = '2026-01-01T00:00:01.000Z'
const LATER = '2026-01-01T00:00:05.000Z'
const q = (resource: string, nextAttemptAt = EARLY) => ({ resource, nextAttemptAt })

await test('a body names its resource by type and uuid; anything else is its own', () => {
  assert.equal(deliveryResource(body('arq', 'a')), 'arq/a')
  assert.notEqual(deliveryResource(body('arq', 'a')), deliveryResource(body('device', 'a')))
  assert.equal(deliveryResource('not json'), 'not json')
  assert.equal(deliveryResource('{"data":{}}'), '{"data":{}}')
})

await test("a run takes each resource's first delivery, in queue order, up to max", () => {
  const queue = [q('a'), q('a'), q('b'), q('c'), q('b'), q('d')]
  assert.deepEqual(nextRun(queue, 16, NOW), { run: [queue[0], queue[2], queue[3], queue[5]] })
  assert.deepEqual(nextRun(queue, 2, NOW), { run: [queue[0], queue[2]] })
  assert.deepEqual(nextRun(queue, 1, NOW), { run: [queue[0]] })
  assert.deepEqual(nextRun([], 16, NOW), { run: [] })
})

await test('a delivery not yet due holds back every one after it', () => {
  const queue = [q('a'), q('a'), q('b', LATER), q('c')]
  assert.deepEqual(nextRun(queue, 16, NOW), { run: [queue[0]], dueAt: LATER })
  assert.deepEqual(nextRun(queue.slice(2), 16, NOW), { run: [], dueAt: LATER })
})
