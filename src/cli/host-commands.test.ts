import { test } from 'node:test'
import assert from 'node:assert/strict'
import { hostRows } from './host-commands.js'

test('host rows: the agent up or down since its last beat, devices counted by health', () => {
  const services = [
    { host: 'c1', binary: 'cyborg-agent', state: 'up', last_seen: 't1' },
    { host: 'c1', binary: 'cyborg-api', state: 'up', last_seen: 't1' },
    { host: 'c2', binary: 'cyborg-agent', state: 'down', last_seen: '2026-11-25T06:12:03' },
  ]
  const devices = [
    { hostname: 'c2', health: 'unknown' },
    { hostname: 'c1', health: 'ok' },
    { hostname: 'c1', health: 'failed' },
    { hostname: 'c3', health: 'degraded' },
  ]
  const zero = { ok: 0, degraded: 0, failed: 0, unknown: 0 }
  assert.deepEqual(hostRows(services, devices), [
    { hostname: 'c1', agent: 'up', devices: 2, ...zero, ok: 1, failed: 1 },
    { hostname: 'c2', agent: 'down since 2026-11-25T06:12:03', devices: 1, ...zero, unknown: 1 },
    { hostname: 'c3', agent: 'none', devices: 1, ...zero, degraded: 1 },
  ])
})
