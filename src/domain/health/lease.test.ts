import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { isFencedHealth, nextHealth, silentAgentReason } from './report.js'
import { leaseFences, leaseRegained } from './lease.js'

const reasonA = silentAgentReason('cyborg-agent', 'a', '2026-01-01 00:00:00')
const agents = [
  { host: 'a', reason: reasonA },
  { host: 'b', reason: 'agent cyborg-agent@b silent since x' },
]
const dev = (
  deviceId: number,
  hostname: string,
  health: string,
  healthReason: string | null = null,
) => ({
  deviceId,
  hostname,
  health,
  healthReason,
})

await test('lease health: a silent agent fences its offered devices unknown, one fence per host, asking a full report', () => {
  const fences = leaseFences(agents, [
    dev(1, 'b', 'ok'),
    dev(2, 'a', 'degraded', 'PCIe link x8'),
    dev(3, 'b', 'failed', 'ecc'),
    dev(4, 'a', 'ok'),
  ])
  assert.deepEqual(
    fences.map((f) => [f.host, f.reason, f.changes.map((c) => c.deviceId)]),
    [
      ['b', agents[1]!.reason, [1]],
      ['a', reasonA, [2, 4]],
    ],
    'in the order of the devices; a device already fenced is left alone',
  )
  assert.deepEqual(fences[1]!.changes[0], {
    deviceId: 2,
    health: 'unknown',
    reason: reasonA,
    transition: { from: 'degraded', to: 'unknown', reason: reasonA },
    forceReport: true,
  })
})

await test('lease health: no fence for a host without an offered device, nor for a device of another host', () => {
  assert.deepEqual(leaseFences(agents, [dev(1, 'a', 'unknown', reasonA), dev(2, 'c', 'ok')]), [])
  assert.deepEqual(leaseFences([], [dev(1, 'a', 'ok')]), [])
})

await test('lease health: a report that moves a lease-fenced device out of unknown regains the lease', () => {
  const before = [
    { id: 1, healthReason: reasonA },
    { id: 2, healthReason: 'nvidia-smi failed: exit code 9' },
    { id: 3, healthReason: reasonA },
  ]
  const changes = [
    { deviceId: 1, from: 'unknown' },
    { deviceId: 2, from: 'unknown' },
    { deviceId: 3, from: 'failed' },
  ]
  assert.deepEqual(leaseRegained(before, changes), [1])
})

await test('lease health (property): every offered device of a silent host is fenced exactly once, nothing else', () => {
  const device = fc.record({
    deviceId: fc.nat(50),
    hostname: fc.constantFrom('a', 'b', 'c'),
    health: fc.constantFrom('ok', 'degraded', 'failed', 'unknown'),
    healthReason: fc.constant(null),
  })
  fc.assert(
    fc.property(fc.uniqueArray(device, { selector: (d) => d.deviceId }), (devices) => {
      const fences = leaseFences(agents, devices)
      const fenced = fences.flatMap((f) => f.changes.map((c) => c.deviceId))
      const want = devices
        .filter((d) => d.hostname !== 'c' && !isFencedHealth(d.health))
        .map((d) => d.deviceId)
      assert.deepEqual([...fenced].sort(), [...want].sort())
      for (const f of fences) for (const c of f.changes) assert.equal(c.health, 'unknown')
    }),
  )
})

await test('lease health (property): a lease fence is not damped: the first report lifts it', () => {
  const state = fc.constantFrom('ok' as const, 'degraded' as const)
  fc.assert(
    fc.property(state, fc.integer({ min: 1, max: 5 }), fc.nat(5), (to, recovery, streak) => {
      const cur = {
        health: 'unknown',
        healthReason: reasonA,
        lifecycleReason: null,
        healthyReports: streak,
      }
      const out = nextHealth(cur, false, { state: to }, recovery)
      assert.equal(out.recovering, false)
      assert.equal(out.set?.health, to)
      assert.deepEqual(
        leaseRegained([{ id: 1, healthReason: reasonA }], [{ deviceId: 1, ...out.transition! }]),
        [1],
      )
    }),
  )
})
