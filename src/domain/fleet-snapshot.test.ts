import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readThroughCache } from './fleet-snapshot.js'

/** A promise settled from outside. */
function deferred<T>() {
  let resolve!: (v: T) => void
  let reject!: (e: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/** A loader that counts its calls and answers `${key}#${call}`. */
function counting() {
  const calls: string[] = []
  const load = (key: string) => {
    calls.push(key)
    return Promise.resolve(`${key}#${calls.length}`)
  }
  return { calls, load }
}

void test('read-through: a fresh value is served, a stale one reloaded', async () => {
  let clock = 1000
  const { calls, load } = counting()
  const cache = readThroughCache({ ttlMs: 100, load, now: () => clock })
  assert.equal(await cache.get('fleet'), 'fleet#1')
  clock += 99
  assert.equal(await cache.get('fleet'), 'fleet#1')
  clock += 1
  assert.equal(await cache.get('fleet'), 'fleet#2')
  assert.equal(await cache.get('h1'), 'h1#3', 'each key has its own value')
  assert.deepEqual(calls, ['fleet', 'fleet', 'h1'])
})

void test('read-through: the age counts from the start of the load', async () => {
  let clock = 0
  let loads = 0
  const slow = deferred<string>()
  const cache = readThroughCache({
    ttlMs: 100,
    load: () => (++loads === 1 ? slow.promise : Promise.resolve(`v#${loads}`)),
    now: () => clock,
  })
  const first = cache.get('k')
  clock = 60
  slow.resolve('v#1')
  assert.equal(await first, 'v#1')
  clock = 99
  assert.equal(await cache.get('k'), 'v#1')
  clock = 100
  assert.equal(await cache.get('k'), 'v#2', 'stale 100 ms after its load started, not ended')
  assert.equal(loads, 2)
})

void test('read-through: concurrent callers share one load under way', async () => {
  const gate = deferred<string>()
  let loads = 0
  const cache = readThroughCache({
    ttlMs: 1000,
    load: () => {
      loads++
      return gate.promise
    },
  })
  const waiting = [cache.get('fleet'), cache.get('fleet'), cache.get('fleet')]
  assert.equal(loads, 1)
  gate.resolve('snapshot')
  assert.deepEqual(await Promise.all(waiting), ['snapshot', 'snapshot', 'snapshot'])
  assert.equal(await cache.get('fleet'), 'snapshot')
  assert.equal(loads, 1)
})

void test('read-through: a failed load is not kept, and all its waiters see the error', async () => {
  const gate = deferred<string>()
  let loads = 0
  const cache = readThroughCache({
    ttlMs: 1000,
    load: () => (++loads === 1 ? gate.promise : Promise.resolve(`ok#${loads}`)),
  })
  const a = cache.get('fleet')
  const b = cache.get('fleet')
  gate.reject(new Error('database down'))
  await assert.rejects(a, /database down/)
  await assert.rejects(b, /database down/)
  assert.equal(cache.size, 0)
  assert.equal(await cache.get('fleet'), 'ok#2')
  assert.equal(await cache.get('fleet'), 'ok#2')
  assert.equal(loads, 2)
})

void test('read-through: a loader that throws at once is a rejection, not kept', async () => {
  let loads = 0
  const cache = readThroughCache<string, string>({
    ttlMs: 1000,
    load: () => {
      loads++
      throw new Error('boom')
    },
  })
  await assert.rejects(cache.get('k'), /boom/)
  await assert.rejects(cache.get('k'), /boom/)
  assert.equal(loads, 2)
})

void test('read-through: TTL 0 caches nothing, not even a load under way', async () => {
  const { calls, load } = counting()
  const cache = readThroughCache({ ttlMs: 0, load, now: () => 0 })
  const [a, b] = await Promise.all([cache.get('k'), cache.get('k')])
  assert.deepEqual([a, b, await cache.get('k')], ['k#1', 'k#2', 'k#3'])
  assert.deepEqual(calls, ['k', 'k', 'k'])
  assert.equal(cache.size, 0)
})

void test('read-through: at most maxEntries keys, the oldest loaded goes first', async () => {
  const { calls, load } = counting()
  const cache = readThroughCache({ ttlMs: 1000, load, maxEntries: 2, now: () => 0 })
  await cache.get('a')
  await cache.get('b')
  await cache.get('c')
  assert.equal(cache.size, 2)
  await cache.get('c')
  await cache.get('b')
  await cache.get('a')
  assert.deepEqual(calls, ['a', 'b', 'c', 'a'])
  cache.clear()
  assert.equal(cache.size, 0)
  await cache.get('b')
  assert.deepEqual(calls, ['a', 'b', 'c', 'a', 'b'])
})
