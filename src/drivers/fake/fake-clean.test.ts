import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createFakeDriver, fakeHandleAddress } from './fake.js'
import { runClean, type CleanTarget } from '../clean.js'
import { createMemoryHostProbe } from '../driver-contract.case.js'
import { FAKE_CONTROL_PATH } from './fake.js'

const target: CleanTarget = {
  controlPath: { type: 'PCI', info: FAKE_CONTROL_PATH },
  handle: { type: 'TEST_PCI', info: { ...fakeHandleAddress(3) } },
}
const fake = (options: Record<string, string> = {}) =>
  createFakeDriver({ host: createMemoryHostProbe({}), hostname: 'h' }, options)

void describe('fake: clean', () => {
  void it('reports the configured evidence, or names the unit', async () => {
    assert.deepEqual(await runClean(fake(), target, { now: () => 0 }), {
      method: 'fake',
      evidence: 'fake clean of 0000:0c:00:3',
      verifyEvidence: 'fake verify of 0000:0c:00:3',
      policy: 'auto',
      durationMs: 0,
    })
    const report = await runClean(fake({ clean_evidence: 'wiped' }), target)
    assert.equal(report.evidence, 'wiped')
  })

  void it('fails, refuses or fails its verify as configured', async () => {
    await assert.rejects(runClean(fake({ clean_outcome: 'fail' }), target), {
      code: 'CLEAN_FAILED',
    })
    await assert.rejects(runClean(fake({ clean_outcome: 'unsupported' }), target), {
      code: 'CLEAN_UNSUPPORTED',
    })
    await assert.rejects(runClean(fake({ clean_verify: 'fail' }), target), {
      code: 'VERIFY_FAILED',
    })
  })

  void it('takes clean_delay_ms, and times out past clean_timeout', async () => {
    const started = Date.now()
    await runClean(fake({ clean_delay_ms: '30' }), target)
    assert.ok(Date.now() - started >= 25)
    await assert.rejects(runClean(fake({ clean_delay_ms: '5000' }), target, { timeoutMs: 20 }), {
      code: 'CLEAN_TIMEOUT',
    })
  })

  void it('clean = none; bad options are refused at creation', async () => {
    assert.equal(
      (await runClean(fake({ clean: 'none', clean_outcome: 'fail' }), target)).method,
      'none',
    )
    assert.throws(() => fake({ clean_outcome: 'maybe' }), { name: 'ConfigError' })
    assert.throws(() => fake({ clean_delay_ms: '-1' }), { name: 'ConfigError' })
  })
})
