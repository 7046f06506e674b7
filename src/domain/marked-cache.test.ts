/**
 * markedCache (src/domain/fleet-snapshot.ts): a value is reused only under the marker it was loaded under, never
 * kept when the marker moved during its load, shared while loading, and not kept when it failed.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { markedCache } from './fleet-snapshot.js'

function setup() {
  let marker: string | undefined = 'm1'
  let calls = 0
  let during: (() => void) | undefined
  let fail = false
  const cache = markedCache({
    marker: () => Promise.resolve(marker),
    load: async (key: string) => {
      calls++
      during?.()
      if (fail) throw new Error('load failed')
      return `${key}#${calls}`
    },
  })
  return {
    cache,
    calls: () => calls,
    setMarker: (m: string | undefined) => (marker = m),
    duringLoad: (f: (() => void) | undefined) => (during = f),
    failing: (f: boolean) => (fail = f),
  }
}

void test('marked cache: reused while the marker stands, reloaded when it moves', async () => {
  const t = setup()
  assert.equal(await t.cache.get('fleet'), 'fleet#1')
  assert.equal(await t.cache.get('fleet'), 'fleet#1')
  assert.equal(await t.cache.get('h1'), 'h1#2')
  t.setMarker('m2')
  assert.equal(await t.cache.get('fleet'), 'fleet#3')
  assert.equal(await t.cache.get('fleet'), 'fleet#3')
  assert.equal(t.calls(), 3)
})

void test('marked cache: a load during which the marker moved is answered, not kept', async () => {
  const t = setup()
  t.duringLoad(() => t.setMarker('m2'))
  assert.equal(await t.cache.get('fleet'), 'fleet#1')
  t.duringLoad(undefined)
  assert.equal(await t.cache.get('fleet'), 'fleet#2')
  assert.equal(await t.cache.get('fleet'), 'fleet#2')
})

void test('marked cache: shared while loading; a failure is not kept; no marker, no keeping', async () => {
  const t = setup()
  const [a, b] = await Promise.all([t.cache.get('fleet'), t.cache.get('fleet')])
  assert.deepEqual([a, b, t.calls()], ['fleet#1', 'fleet#1', 1])
  t.setMarker('m2')
  t.failing(true)
  await assert.rejects(t.cache.get('fleet'), /load failed/)
  t.failing(false)
  assert.equal(await t.cache.get('fleet'), 'fleet#3')
  t.setMarker(undefined)
  assert.equal(await t.cache.get('fleet'), 'fleet#4')
  assert.equal(await t.cache.get('fleet'), 'fleet#5')
})
