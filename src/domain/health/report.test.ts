import { test } from 'node:test'
import assert from 'node:assert/strict'
import { MISSING_REASON, isSilentAgentReason, nextHealth, silentAgentReason } from './report.js'

const ok = { health: 'ok', healthReason: null, lifecycleReason: null, healthyReports: 0 }
const ecc = { state: 'failed' as const, reason: '2 uncorrectable ECC errors (volatile)' }

await test('health: a finding fences at once and is one transition', () => {
  assert.deepEqual(nextHealth(ok, false, ecc, 2), {
    set: { health: 'failed', healthReason: ecc.reason },
    transition: { from: 'ok', to: 'failed', reason: ecc.reason },
    recovering: false,
  })
  assert.deepEqual(nextHealth(ok, false, undefined, 2), { recovering: false }, 'ok stays ok')
})

await test('health: damping holds a fenced device until N healthy reports in a row', () => {
  const failed = { ...ok, health: 'failed', healthReason: ecc.reason }
  const first = nextHealth(failed, false, undefined, 3)
  assert.deepEqual(first, { set: { healthyReports: 1 }, recovering: true })
  const second = nextHealth({ ...failed, healthyReports: 1 }, false, undefined, 3)
  assert.deepEqual(second, { set: { healthyReports: 2 }, recovering: true })
  const third = nextHealth({ ...failed, healthyReports: 2 }, false, { state: 'degraded' }, 3)
  assert.deepEqual(third, {
    set: { health: 'degraded', healthReason: null, healthyReports: 0 },
    transition: { from: 'failed', to: 'degraded', reason: null },
    recovering: false,
  })
  // Flapping: failing again resets the count, without a transition (still failed).
  const again = nextHealth({ ...failed, healthyReports: 2 }, false, ecc, 3)
  assert.deepEqual(again, { set: { healthyReports: 0 }, recovering: false })
  // N = 1: no damping.
  assert.equal(nextHealth(failed, false, undefined, 1).set?.health, 'ok')
  // A probe that could not run is damped too.
  const unknown = { ...ok, health: 'unknown', healthReason: 'nvidia-smi failed: timeout' }
  assert.equal(nextHealth(unknown, false, undefined, 2).recovering, true)
})

await test('health: a lease fence and a missing mark lift at the first full report', () => {
  const reason = silentAgentReason('cyborg-agent', 'compute-7', '2026-11-25T06:12:03Z')
  assert.equal(reason, 'agent cyborg-agent@compute-7 silent since 2026-11-25T06:12:03Z')
  assert.ok(isSilentAgentReason(reason))
  assert.ok(!isSilentAgentReason(ecc.reason))
  const fenced = { ...ok, health: 'unknown', healthReason: reason }
  assert.deepEqual(nextHealth(fenced, false, undefined, 2), {
    set: { health: 'ok', healthReason: null },
    transition: { from: 'unknown', to: 'ok', reason: null },
    recovering: false,
  })
  // Back from the lease fence, the report may say the device is failed: it says so at once.
  assert.equal(nextHealth(fenced, false, ecc, 2).set?.health, 'failed')
  const marked = { ...ok, health: 'failed', lifecycleReason: MISSING_REASON }
  assert.deepEqual(nextHealth(marked, false, undefined, 2).set, {
    health: 'ok',
    healthReason: null,
    lifecycleReason: null,
  })
  assert.deepEqual(nextHealth(marked, true, undefined, 2), { recovering: false }, 'still missing')
})

await test('health: a reason that changes alone is written, but is not a transition', () => {
  const degraded = { ...ok, health: 'degraded', healthReason: '1000 correctable PCIe AER errors' }
  const more = { state: 'degraded' as const, reason: '1200 correctable PCIe AER errors' }
  assert.deepEqual(nextHealth(degraded, false, more, 2), {
    set: { health: 'degraded', healthReason: more.reason },
    recovering: false,
  })
})
