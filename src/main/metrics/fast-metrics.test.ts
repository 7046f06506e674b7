import { test } from 'node:test'
import assert from 'node:assert/strict'
import { FastCounter, FastHistogram } from './fast-metrics.js'

await test('a histogram counts each value in its first bucket at or above it, cumulated, +Inf for all', async () => {
  const h = new FastHistogram('x_seconds', 'X.', ['route'], [0.1, 1])
  for (const v of [0.05, 0.1, 0.5, 1, 7]) h.observe({ route: '/a' }, v)
  h.observe({ route: '/b' }, 0.2)
  const { values } = await h.get()
  const of = (route: string) =>
    values
      .filter((v) => v.labels.route === route)
      .map(
        (v) =>
          `${v.metricName}${v.labels.le === undefined ? '' : `{le=${v.labels.le}}`} ${v.value}`,
      )
  assert.deepEqual(of('/a'), [
    'x_seconds_bucket{le=0.1} 2',
    'x_seconds_bucket{le=1} 4',
    'x_seconds_bucket{le=+Inf} 5',
    'x_seconds_sum 8.65',
    'x_seconds_count 5',
  ])
  assert.deepEqual(of('/b'), [
    'x_seconds_bucket{le=0.1} 0',
    'x_seconds_bucket{le=1} 1',
    'x_seconds_bucket{le=+Inf} 1',
    'x_seconds_sum 0.2',
    'x_seconds_count 1',
  ])
  assert.throws(() => h.observe({}, Number.NaN), RangeError)
})

await test('a counter adds per label set (missing labels are empty), shows 0 unlabelled, and refuses to go down', async () => {
  const c = new FastCounter('y_total', 'Y.', ['a', 'b'])
  c.inc({ a: '1', b: '2' }, 1)
  c.inc({ b: '2', a: '1' }, 2)
  c.inc({ a: '1' }, 1)
  const { values } = await c.get()
  assert.deepEqual(values, [
    { value: 3, labels: { a: '1', b: '2' } },
    { value: 1, labels: { a: '1', b: '' } },
  ])
  assert.throws(() => c.inc({}, -1), RangeError)
  const bare = new FastCounter('z_total', 'Z.', [])
  assert.deepEqual((await bare.get()).values, [{ value: 0, labels: {} }])
})
