import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  EVENT_TYPES,
  eventTypeMatches,
  parseWebhookChanges,
  parseWebhookCreate,
  retryDelayMs,
  webhookWants,
} from './webhooks.js'

test('event filters: exact names, prefix wildcards, empty takes all', () => {
  assert.ok(EVENT_TYPES.includes('accelerator.arq.bound'))
  assert.ok(EVENT_TYPES.includes('accelerator.device.health_changed'))
  assert.ok(eventTypeMatches([], 'accelerator.device.added'))
  assert.ok(eventTypeMatches(['accelerator.arq.*'], 'accelerator.arq.bind_failed'))
  assert.ok(!eventTypeMatches(['accelerator.arq.*'], 'accelerator.device.added'))
  assert.ok(eventTypeMatches(['accelerator.*'], 'accelerator.agent.lease_lost'))
  assert.ok(!eventTypeMatches(['accelerator.arq.bound'], 'accelerator.arq.unbound'))
  const p1 = { eventTypes: [], projectIds: ['p1'] }
  assert.ok(webhookWants(p1, { eventType: 'accelerator.arq.bound', projectId: 'p1' }))
  assert.ok(!webhookWants(p1, { eventType: 'accelerator.arq.bound', projectId: 'p2' }))
  assert.ok(!webhookWants(p1, { eventType: 'accelerator.device.added', projectId: null }))
  assert.ok(webhookWants({ eventTypes: [], projectIds: [] }, { eventType: 'x', projectId: null }))
})

test('create and change bodies: defaults, URL as written, duplicates dropped', () => {
  assert.throws(() => parseWebhookCreate({ url: 'HTTPS://Example.com:443/a b' }), {
    message: /'url': would be read as "https:\/\/example.com\/a%20b"/,
  })
  assert.deepEqual(parseWebhookCreate({ url: 'https://example.com:8443/a%20b' }), {
    url: 'https://example.com:8443/a%20b',
    eventTypes: [],
    projectIds: [],
    description: null,
    enabled: true,
  })
  const c = parseWebhookCreate({
    url: 'http://h/',
    event_types: ['accelerator.arq.*', 'accelerator.arq.*'],
    project_ids: ['p', 'p'],
    enabled: false,
  })
  assert.deepEqual([c.eventTypes, c.projectIds, c.enabled], [['accelerator.arq.*'], ['p'], false])
  assert.deepEqual(parseWebhookChanges({ description: null }), { description: null })
  assert.throws(() => parseWebhookChanges({ url: 'file:///etc/passwd' }), {
    details: { field: 'url' },
  })
  assert.throws(() => parseWebhookCreate({ url: 'http://h/', event_types: ['accelerator.*.*'] }), {
    details: { field: 'event_types[0]' },
  })
})

test('backoff: full jitter under an exponential ceiling, capped', () => {
  const s = { baseMs: 1000, capMs: 300_000 }
  const top = () => 0.999999
  assert.deepEqual(
    [1, 2, 3, 4, 9, 10, 50].map((n) => retryDelayMs(n, s, top)),
    [999, 1999, 3999, 7999, 255_999, 299_999, 299_999],
  )
  assert.equal(
    retryDelayMs(5, s, () => 0),
    0,
  )
  for (let i = 0; i < 100; i++) {
    const d = retryDelayMs(3, s)
    assert.ok(d >= 0 && d < 4000, String(d))
  }
})
