/**
 * The Fleet page's rows (web/fleet/fleet-data.ts), as pure functions: hosts from the summary and
 * the agents' leases (hidden when policy refuses them), problems first, at most 50 rows until
 * "Show all", the name filter, and the counts most first.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  countsOf,
  HOST_ROWS,
  hostsOf,
  visibleHosts,
  type Service,
} from '../../web/fleet/fleet-data.js'

const agent = (host: string, state: 'up' | 'down'): Service => ({
  host,
  binary: 'cyborg-agent',
  state,
  last_seen: '2026-11-28T21:00:00.000000+00:00',
  seconds_since_last_seen: 1,
})

void test('hosts: leases from the agents, problems first, then by name', () => {
  const counts = [
    { hostname: 'a', devices: 8, unhealthy: 0 },
    { hostname: 'b', devices: 8, unhealthy: 1 },
    { hostname: 'c', devices: 8, unhealthy: 3 },
    { hostname: 'd', devices: 8, unhealthy: 0 },
  ]
  const services = [
    agent('a', 'up'),
    agent('b', 'up'),
    agent('c', 'up'),
    agent('d', 'down'),
    agent('e', 'up'),
    { ...agent('x', 'up'), binary: 'cyborg-conductor' },
  ]
  const hosts = hostsOf(counts, services)
  assert.deepEqual(
    hosts.map((h) => [h.host, h.lease, h.devices, h.unhealthy]),
    [
      ['d', 'expired', 8, 0],
      ['c', 'held', 8, 3],
      ['b', 'held', 8, 1],
      ['a', 'held', 8, 0],
      ['e', 'held', 0, 0],
    ],
  )
})

void test('hosts when policy refuses the leases: those with devices, lease hidden', () => {
  const hosts = hostsOf(
    [
      { hostname: 'a', devices: 2, unhealthy: 0 },
      { hostname: 'b', devices: 2, unhealthy: 1 },
    ],
    null,
  )
  assert.deepEqual(
    hosts.map((h) => [h.host, h.lease, h.lastSeen]),
    [
      ['b', 'hidden', ''],
      ['a', 'hidden', ''],
    ],
  )
})

void test('visible hosts: the first 50 until all, filtered by part of the name', () => {
  const counts = Array.from({ length: 1000 }, (_, i) => ({
    hostname: `compute-${String(i).padStart(4, '0')}`,
    devices: 8,
    unhealthy: i % 100 === 7 ? 1 : 0,
  }))
  const hosts = hostsOf(counts, null)
  const first = visibleHosts(hosts, '', false)
  assert.equal(first.rows.length, HOST_ROWS)
  assert.equal(first.matching, 1000)
  assert.deepEqual(
    first.rows.slice(0, 10).map((h) => h.unhealthy),
    [1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
  )
  assert.equal(first.rows[10]!.host, 'compute-0000')
  assert.equal(visibleHosts(hosts, '', true).rows.length, 1000)
  const some = visibleHosts(hosts, ' COMPUTE-09', false)
  assert.equal(some.matching, 100)
  assert.equal(some.rows.length, HOST_ROWS)
  assert.deepEqual(visibleHosts(hosts, 'nowhere', false), { rows: [], matching: 0 })
})

void test('counts: most first, then by name', () => {
  assert.deepEqual(countsOf({ ok: 2, failed: 1, degraded: 1, unknown: 5 }), [
    ['unknown', 5],
    ['ok', 2],
    ['degraded', 1],
    ['failed', 1],
  ])
})
