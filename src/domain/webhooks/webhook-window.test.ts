/** Which queued deliveries go out together: one per resource, each its resource's first. */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { deliveryResource, nextRun } from './webhook-window.js'

const body = (type: string, uuid: string) =>
  JSON.stringify({ type: 'x', data: { resource_type: type, resource_uuid: uuid } })
const q = (resource: string) => ({ resource })

await test('a body names its resource by type and uuid; anything else is its own', () => {
  assert.equal(deliveryResource(body('arq', 'a')), 'arq/a')
  assert.notEqual(deliveryResource(body('arq', 'a')), deliveryResource(body('device', 'a')))
  assert.equal(deliveryResource('not json'), 'not json')
  assert.equal(deliveryResource('{"data":{}}'), '{"data":{}}')
})

await test("a run takes each resource's first delivery, in queue order, up to max", () => {
  const queue = [q('a'), q('a'), q('b'), q('c'), q('b'), q('d')]
  assert.deepEqual(nextRun(queue, 16), [queue[0], queue[2], queue[3], queue[5]])
  assert.deepEqual(nextRun(queue, 2), [queue[0], queue[2]])
  assert.deepEqual(nextRun(queue, 1), [queue[0]])
  assert.deepEqual(nextRun([], 16), [])
})

await test('a resource with a delivery in flight is skipped', () => {
  const queue = [q('a'), q('b'), q('a'), q('c')]
  assert.deepEqual(nextRun(queue, 16, new Set(['a'])), [queue[1], queue[3]])
})
