import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { cleanSettings, runClean, type CleanResult } from './clean.js'
import type { AcceleratorDriver } from './driver.js'
import { DeviceType } from '../domain/inventory/inventory.js'
import { ConfigError } from '../domain/errors.js'
import { pciTarget } from './clean-test-support.js'

const target = pciTarget('0000:3b:00.0')

/** A driver whose clean and verify do what the test says, counting calls. */
function driver(
  clean?: (signal?: AbortSignal) => Promise<CleanResult>,
  verify?: () => Promise<{ evidence: string }>,
) {
  const calls: string[] = []
  const d: AcceleratorDriver = {
    name: 'test',
    deviceType: DeviceType.PCI,
    discover: async () => [],
    ...(clean
      ? {
          clean: async (_t, { signal } = {}) => {
            calls.push('clean')
            return clean(signal)
          },
        }
      : {}),
    ...(verify
      ? {
          verify: async () => {
            calls.push('verify')
            return verify()
          },
        }
      : {}),
  }
  return { d, calls }
}

const ok = async (): Promise<CleanResult> => ({ method: 'pci-flr', evidence: 'wrote 1' })

void describe('runClean', () => {
  void it('runs clean then verify and reports both, with the time taken', async () => {
    const { d, calls } = driver(ok, async () => ({ evidence: 'ids unchanged' }))
    let t = 1000
    const report = await runClean(d, target, { now: () => (t += 5) })
    assert.deepEqual(calls, ['clean', 'verify'])
    assert.deepEqual(report, {
      method: 'pci-flr',
      evidence: 'wrote 1',
      policy: 'auto',
      verifyEvidence: 'ids unchanged',
      durationMs: 5,
    })
  })

  void it('clean = none touches nothing, says so, and logs it as the operator’s choice', async () => {
    const { d, calls } = driver(ok)
    const warned: unknown[] = []
    const log = {
      warn: (...a: unknown[]) => warned.push(a),
      error: () => {},
      info: () => {},
      debug: () => {},
      child: () => log,
    }
    const report = await runClean(d, target, { policy: 'none', log })
    assert.deepEqual(calls, [])
    assert.equal(report.method, 'none')
    assert.equal(report.policy, 'none')
    assert.match(report.evidence, /operator choice/)
    assert.equal(warned.length, 1)
  })

  void it('takes the policy from the driver’s own settings', async () => {
    const { d, calls } = driver(ok)
    const report = await runClean({ ...d, cleanSettings: { policy: 'none', timeoutMs: 1 } }, target)
    assert.equal(report.method, 'none')
    assert.deepEqual(calls, [])
  })

  void it('refuses a driver without a clean step (CLEAN_UNSUPPORTED)', async () => {
    await assert.rejects(runClean(driver().d, target), {
      name: 'DriverError',
      code: 'CLEAN_UNSUPPORTED',
    })
  })

  void it('times out with CLEAN_TIMEOUT, aborting the driver’s signal, even if it ignores it', async () => {
    let seen: AbortSignal | undefined
    const hang = (signal?: AbortSignal) => {
      seen = signal
      return new Promise<CleanResult>(() => {})
    }
    await assert.rejects(runClean(driver(hang).d, target, { timeoutMs: 20 }), {
      code: 'CLEAN_TIMEOUT',
    })
    assert.equal(seen?.aborted, true)
    const slow = { ...driver(hang).d, cleanSettings: { policy: 'auto' as const, timeoutMs: 10 } }
    await assert.rejects(runClean(slow, target), { code: 'CLEAN_TIMEOUT' })
  })

  void it('the caller’s signal aborts with CLEAN_ABORTED', async () => {
    const hang = () => new Promise<CleanResult>(() => {})
    const ac = new AbortController()
    const run = runClean(driver(hang).d, target, { signal: ac.signal, timeoutMs: 10_000 })
    ac.abort()
    await assert.rejects(run, { code: 'CLEAN_ABORTED' })
    await assert.rejects(runClean(driver(ok).d, target, { signal: ac.signal }), {
      code: 'CLEAN_ABORTED',
    })
  })

  void it('passes the driver’s errors through (a failing verify)', async () => {
    const { d } = driver(ok, () => Promise.reject(new ConfigError('x', { code: 'VERIFY_FAILED' })))
    await assert.rejects(runClean(d, target), { code: 'VERIFY_FAILED' })
  })
})

void describe('cleanSettings', () => {
  void it('defaults to auto and the driver’s time limit', () => {
    assert.deepEqual(cleanSettings('pci', {}, 60), { policy: 'auto', timeoutMs: 60_000 })
    assert.deepEqual(cleanSettings('pci', { clean: 'none', clean_timeout: '5' }, 60), {
      policy: 'none',
      timeoutMs: 5000,
    })
  })

  void it('refuses other words and non-positive or non-integer timeouts, naming the option', () => {
    assert.throws(() => cleanSettings('pci', { clean: 'off' }, 60), {
      name: 'ConfigError',
      message: /pci driver option clean: must be one of auto, none/,
    })
    for (const bad of ['0', '-1', '1.5', 'soon']) {
      assert.throws(() => cleanSettings('pci', { clean_timeout: bad }, 60), {
        name: 'ConfigError',
        details: { driver: 'pci', option: 'clean_timeout' },
      })
    }
  })
})
