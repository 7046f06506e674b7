import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { METRICS } from './metrics.js'

await test('docs/metrics.md lists every metric with its type and labels', () => {
  const doc = readFileSync(new URL('../../docs/metrics.md', import.meta.url), 'utf8')
  for (const [name, spec] of Object.entries(METRICS)) {
    const labels = spec.labels.map((l) => `\`${l}\``).join(', ') || '—'
    assert.ok(doc.includes(`| \`${name}\` | ${spec.type} | ${labels} |`), `${name} is documented`)
  }
})

await test('metric names follow the Prometheus conventions', () => {
  for (const [name, spec] of Object.entries(METRICS)) {
    assert.match(name, /^cyborg_[a-z_]+$/)
    assert.equal(name.endsWith('_total'), spec.type === 'counter', `${name}: _total iff a counter`)
    for (const label of spec.labels) assert.doesNotMatch(label, /uuid|instance|request_id/)
  }
})
