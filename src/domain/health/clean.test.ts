import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { CLEAN_FAILED_PREFIX, isCleanFailedReason, nextHealth } from './report.js'
import { healthAfter } from './change.js'
import { cleanLiftNeedsFailedUnits, cleanMayChangeHealth, healthAfterClean } from './clean.js'

const ok = { deviceId: 7, health: 'ok', healthReason: null }
const cleanFenced = { deviceId: 7, health: 'failed', healthReason: 'clean failed: wipe refused' }
const failed = { failed: true as const, reason: 'wipe refused' }
const success = { failed: false as const }

await test('clean health: a failed clean fences an offered device, with a transition, no full report', () => {
  for (const health of ['ok', 'degraded', 'unknown']) {
    const change = healthAfterClean({ ...ok, health }, failed)
    assert.deepEqual(change, {
      deviceId: 7,
      health: 'failed',
      reason: 'clean failed: wipe refused',
      transition: { from: health, to: 'failed', reason: 'clean failed: wipe refused' },
      forceReport: false,
    })
  }
})

await test('clean health: a failed clean on a device failed for another reason takes the reason over', () => {
  const ecc = { deviceId: 7, health: 'failed', healthReason: '2 uncorrectable ECC errors' }
  assert.deepEqual(healthAfterClean(ecc, failed), {
    deviceId: 7,
    reason: 'clean failed: wipe refused',
    forceReport: false,
  })
})

await test('clean health: a failed clean on a device already fenced by a clean changes nothing', () => {
  assert.equal(healthAfterClean(cleanFenced, { failed: true, reason: 'again' }), undefined)
})

await test('clean health: the reason is clipped to 255 characters', () => {
  const change = healthAfterClean(ok, { failed: true, reason: 'x'.repeat(400) })
  assert.equal(change?.reason?.length, 255)
  assert.ok(change?.reason?.startsWith(CLEAN_FAILED_PREFIX))
})

await test('clean health: a success lifts a clean fence once no unit is left failed, asking a full report', () => {
  assert.equal(cleanLiftNeedsFailedUnits(cleanFenced, success), true)
  assert.deepEqual(healthAfterClean(cleanFenced, success, 0), {
    deviceId: 7,
    health: 'ok',
    reason: null,
    transition: { from: 'failed', to: 'ok', reason: null },
    forceReport: true,
  })
  assert.equal(healthAfterClean(cleanFenced, success, 1), undefined, 'another unit still failed')
  assert.equal(healthAfterClean(cleanFenced, success), undefined, 'count not loaded: no lift')
})

await test('clean health: a success leaves a device not fenced by a clean alone, without a count', () => {
  const ecc = { deviceId: 7, health: 'failed', healthReason: '2 uncorrectable ECC errors' }
  for (const cur of [ok, ecc]) {
    assert.equal(cleanLiftNeedsFailedUnits(cur, success), false)
    assert.equal(cleanMayChangeHealth(cur, success), false)
    assert.equal(healthAfterClean(cur, success, 0), undefined)
  }
  assert.equal(
    cleanLiftNeedsFailedUnits(cleanFenced, failed),
    false,
    'a failure never needs the count',
  )
  assert.equal(cleanMayChangeHealth(ok, failed), true)
})

const healthState = fc.constantFrom('ok', 'degraded', 'failed', 'unknown')
const reason = fc.oneof(
  fc.constant(null),
  fc.string(),
  fc.string().map((s) => `${CLEAN_FAILED_PREFIX}${s}`),
  fc.string().map((s) => `configure failed: ${s}`),
)
const device = fc.record({ deviceId: fc.nat(), health: healthState, healthReason: reason })

await test('clean health (property): a clean failure always leaves the device fenced by a clean', () => {
  fc.assert(
    fc.property(device, fc.string(), fc.option(fc.nat(3), { nil: undefined }), (cur, why, left) => {
      const after = healthAfter(cur, healthAfterClean(cur, { failed: true, reason: why }, left))
      assert.equal(after.health, 'failed')
      assert.ok(isCleanFailedReason(after.healthReason))
    }),
  )
})

await test('clean health (property): a success only ever lifts to ok, and only a clean fence with no unit left failed', () => {
  fc.assert(
    fc.property(device, fc.option(fc.nat(3), { nil: undefined }), (cur, left) => {
      const change = healthAfterClean(cur, success, left)
      if (change === undefined) return
      assert.ok(isCleanFailedReason(cur.healthReason))
      assert.equal(left, 0)
      assert.equal(change.health, 'ok')
      assert.equal(change.forceReport, true)
      assert.ok(cleanMayChangeHealth(cur, success))
    }),
  )
})

await test('clean health (property): a clean fence is never lifted by a report', () => {
  const report = fc.option(
    fc.record({
      state: fc.constantFrom(
        'ok' as const,
        'degraded' as const,
        'failed' as const,
        'unknown' as const,
      ),
    }),
    { nil: undefined },
  )
  fc.assert(
    fc.property(fc.string(), report, fc.integer({ min: 1, max: 5 }), (why, reported, recovery) => {
      const cur = {
        health: 'failed',
        healthReason: `${CLEAN_FAILED_PREFIX}${why}`,
        lifecycleReason: null,
      }
      assert.deepEqual(nextHealth(cur, false, reported, recovery), { recovering: false })
    }),
  )
})
