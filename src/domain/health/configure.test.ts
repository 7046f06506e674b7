import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { CONFIGURE_FAILED_PREFIX, nextHealth } from './report.js'
import { healthAfterConfigure, isConfigureFenced } from './configure.js'

const ok = { deviceId: 3, health: 'ok', healthReason: null }
const fenced = {
  deviceId: 3,
  health: 'failed',
  healthReason: 'configure failed: sriov_numvfs refused',
}

await test('configure health: a failure that could not restore fences the device, recorded', () => {
  assert.deepEqual(healthAfterConfigure(ok, 'sriov_numvfs refused'), {
    deviceId: 3,
    health: 'failed',
    reason: 'configure failed: sriov_numvfs refused',
    transition: { from: 'ok', to: 'failed', reason: 'configure failed: sriov_numvfs refused' },
    forceReport: false,
  })
  const again = healthAfterConfigure(fenced, 'still refused')
  assert.deepEqual(again?.transition, {
    from: 'failed',
    to: 'failed',
    reason: 'configure failed: still refused',
  })
  assert.equal(healthAfterConfigure(ok, 'y'.repeat(400))?.reason?.length, 255)
})

await test('configure health: a success lifts a configure fence and asks a full report', () => {
  assert.deepEqual(healthAfterConfigure(fenced, null), {
    deviceId: 3,
    health: 'ok',
    reason: null,
    transition: { from: 'failed', to: 'ok', reason: null },
    forceReport: true,
  })
})

await test('configure health: a success leaves any other health alone', () => {
  const others = [
    ok,
    { ...ok, health: 'failed', healthReason: 'clean failed: x' },
    { ...ok, health: 'failed', healthReason: '2 uncorrectable ECC errors' },
    { ...ok, health: 'unknown', healthReason: 'configure failed: not failed state' },
  ]
  for (const cur of others) {
    assert.equal(isConfigureFenced(cur), false)
    assert.equal(healthAfterConfigure(cur, null), undefined)
  }
})

const reported = fc.option(
  fc.record({
    state: fc.constantFrom(
      'ok' as const,
      'degraded' as const,
      'failed' as const,
      'unknown' as const,
    ),
    reason: fc.option(fc.string(), { nil: undefined }),
  }),
  { nil: undefined },
)

await test('configure health (property): a configure fence is never lifted by a report', () => {
  fc.assert(
    fc.property(
      fc.string(),
      fc.boolean(),
      reported,
      fc.integer({ min: 1, max: 5 }),
      fc.nat(5),
      (why, missing, report, recovery, streak) => {
        const cur = {
          health: 'failed',
          healthReason: `${CONFIGURE_FAILED_PREFIX}${why}`,
          lifecycleReason: null,
          healthyReports: streak,
        }
        const out = nextHealth(cur, missing, report, recovery)
        assert.ok(out.set?.health === undefined || out.set.health === 'failed')
        if (!missing) assert.equal(out.set, undefined)
      },
    ),
  )
})

await test('configure health (property): a failure always fences with the configure reason; a success never fences', () => {
  const device = fc.record({
    deviceId: fc.nat(),
    health: fc.constantFrom('ok', 'degraded', 'failed', 'unknown'),
    healthReason: fc.oneof(
      fc.constant(null),
      fc.string(),
      fc.string().map((s) => `${CONFIGURE_FAILED_PREFIX}${s}`),
    ),
  })
  fc.assert(
    fc.property(device, fc.option(fc.string(), { nil: null }), (cur, failure) => {
      const change = healthAfterConfigure(cur, failure)
      if (failure !== null) {
        assert.equal(change?.health, 'failed')
        assert.ok(change.reason?.startsWith(CONFIGURE_FAILED_PREFIX))
      } else if (change !== undefined) {
        assert.equal(change.health, 'ok')
        assert.ok(isConfigureFenced(cur))
      } else assert.equal(isConfigureFenced(cur), false)
    }),
  )
})
