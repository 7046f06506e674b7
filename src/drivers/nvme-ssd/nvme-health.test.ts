import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import fc from 'fast-check'
import {
  judgeNvmeSmartLog,
  NVME_SMART_LOG_TIMEOUT_MS,
  nvmeHealthThresholds,
  nvmeSmartLogHealth,
  parseNvmeSmartLog,
  type NvmeHealthThresholds,
} from './nvme-health.js'
import type { HostProbe } from '../driver.js'
import { createFixtureHostProbe } from '../host-probe/fixture-host-probe.js'
import { DriverError } from '../../domain/errors.js'

const dir = path.join(import.meta.dirname, '..', '__fixtures__', 'nvme-ssd', 'smart-log')
const recording = (n: number): string =>
  readFileSync(path.join(dir, `nvme-smart-log-_dev_nvme${n}-o-json.json`), 'utf8')

const DEFAULTS: NvmeHealthThresholds = {
  smartLog: true,
  mediaErrorsDegraded: 1,
  percentageUsedDegraded: 90,
  percentageUsedFailed: 0,
}

/** A host whose only command answers (or fails) as given, recording its calls. */
function execHost(answer: () => Promise<string>) {
  const calls: { command: string; args: readonly string[]; timeoutMs?: number | undefined }[] = []
  const host: HostProbe = {
    readFile: () => Promise.reject(new Error('no files')),
    readDir: () => Promise.reject(new Error('no files')),
    exists: () => Promise.resolve(false),
    writeFile: () => Promise.reject(new Error('read-only')),
    exec(command, args, options) {
      calls.push({ command, args, timeoutMs: options?.timeoutMs })
      return answer()
    },
  }
  return { host, calls }
}

void describe('nvme-health: parseNvmeSmartLog', () => {
  void it('reads the recordings: 1.x floats, the 2.x object form, the plain 2.x form', () => {
    assert.deepEqual(parseNvmeSmartLog(recording(0)), {
      criticalWarning: 8,
      mediaErrors: 3,
      percentageUsed: 7,
    })
    assert.deepEqual(parseNvmeSmartLog(recording(1)), {
      criticalWarning: 0,
      mediaErrors: 0,
      percentageUsed: 95,
    })
    assert.deepEqual(parseNvmeSmartLog(recording(2)), {
      criticalWarning: 2,
      mediaErrors: 0,
      percentageUsed: 1,
    })
    assert.equal(parseNvmeSmartLog(recording(3)), undefined) // truncated
  })

  void it('accepts percentage_used, numeric strings and the flag-only object form', () => {
    assert.deepEqual(
      parseNvmeSmartLog('{"critical_warning":"0x4","percentage_used":101,"media_errors":"12"}'),
      { criticalWarning: 4, mediaErrors: 12, percentageUsed: 101 },
    )
    assert.deepEqual(
      parseNvmeSmartLog('{"critical_warning":{"available_spare":1,"ro":1,"pmr_ro":0}}'),
      { criticalWarning: 0b1001 },
    )
    assert.deepEqual(parseNvmeSmartLog('{"critical_warning":{"value":16,"ro":0}}'), {
      criticalWarning: 16,
    })
  })

  void it('gives undefined for anything without a readable critical_warning', () => {
    for (const text of [
      '',
      'Error: Permission denied',
      '[]',
      'null',
      '{"media_errors":4}',
      '{"critical_warning":-1}',
      '{"critical_warning":256}',
      '{"critical_warning":1.5}',
      '{"critical_warning":{}}',
      '{"critical_warning":"warn"}',
    ])
      assert.equal(parseNvmeSmartLog(text), undefined, text)
  })

  void it('drops counters that are not non-negative numbers', () => {
    assert.deepEqual(
      parseNvmeSmartLog('{"critical_warning":0,"media_errors":-3,"percent_used":"lots"}'),
      { criticalWarning: 0 },
    )
  })

  void it('never throws on random text (property)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json()), (text) => {
        const log = parseNvmeSmartLog(text)
        assert.ok(log === undefined || Number.isInteger(log.criticalWarning))
      }),
      { numRuns: 300 },
    )
  })
})

void describe('nvme-health: judgeNvmeSmartLog', () => {
  const judge = (log: Parameters<typeof judgeNvmeSmartLog>[0], t = DEFAULTS) =>
    judgeNvmeSmartLog(log, t)

  void it('a clean log is healthy', () => {
    assert.equal(judge({ criticalWarning: 0, mediaErrors: 0, percentageUsed: 3 }), undefined)
  })

  void it('spare, reliability, read-only, backup and PMR bits fail; temperature degrades', () => {
    assert.deepEqual(judge({ criticalWarning: 8 }), {
      state: 'failed',
      reason: 'NVMe critical warning: read-only (bit 3)',
    })
    assert.deepEqual(judge({ criticalWarning: 0b110101 }), {
      state: 'failed',
      reason:
        'NVMe critical warning: spare below threshold (bit 0), reliability degraded (bit 2), volatile memory backup failed (bit 4), PMR read-only (bit 5)',
    })
    assert.deepEqual(judge({ criticalWarning: 2 }), {
      state: 'degraded',
      reason: 'NVMe critical warning: temperature outside threshold (bit 1)',
    })
    assert.equal(judge({ criticalWarning: 0xc0 }), undefined) // reserved bits
  })

  void it('media errors and wear degrade at their thresholds; 0 turns a check off', () => {
    assert.deepEqual(judge({ criticalWarning: 0, mediaErrors: 3 }), {
      state: 'degraded',
      reason: '3 media errors',
    })
    assert.deepEqual(judge({ criticalWarning: 0, mediaErrors: 1 }), {
      state: 'degraded',
      reason: '1 media error',
    })
    assert.deepEqual(judge({ criticalWarning: 0, mediaErrors: 2, percentageUsed: 95 }), {
      state: 'degraded',
      reason: '2 media errors; 95% of rated endurance used',
    })
    assert.equal(judge({ criticalWarning: 0, percentageUsed: 89 }), undefined)
    const off = { ...DEFAULTS, mediaErrorsDegraded: 0, percentageUsedDegraded: 0 }
    assert.equal(judge({ criticalWarning: 0, mediaErrors: 9, percentageUsed: 120 }, off), undefined)
  })

  void it('wear fails only when percentage_used_failed is set (off by default)', () => {
    assert.deepEqual(judge({ criticalWarning: 0, percentageUsed: 130 }), {
      state: 'degraded',
      reason: '130% of rated endurance used',
    })
    const t = { ...DEFAULTS, percentageUsedFailed: 100 }
    assert.deepEqual(judge({ criticalWarning: 0, percentageUsed: 100 }, t), {
      state: 'failed',
      reason: '100% of rated endurance used',
    })
  })

  void it('the worst finding wins and keeps only its own reasons', () => {
    assert.deepEqual(judge({ criticalWarning: 0b1010, mediaErrors: 5 }), {
      state: 'failed',
      reason: 'NVMe critical warning: read-only (bit 3)',
    })
  })
})

void describe('nvme-health: nvmeHealthThresholds', () => {
  void it('defaults, and every option read', () => {
    assert.deepEqual(nvmeHealthThresholds('nvme-ssd', {}), DEFAULTS)
    assert.deepEqual(
      nvmeHealthThresholds('nvme-ssd', {
        smart_log: 'false',
        media_errors_degraded: '0',
        percentage_used_degraded: ' 80 ',
        percentage_used_failed: '100',
      }),
      {
        smartLog: false,
        mediaErrorsDegraded: 0,
        percentageUsedDegraded: 80,
        percentageUsedFailed: 100,
      },
    )
  })

  void it('a bad value is a ConfigError naming the driver and the option', () => {
    for (const [option, value] of [
      ['media_errors_degraded', '-1'],
      ['percentage_used_degraded', '90%'],
      ['percentage_used_failed', 'yes'],
      ['smart_log', 'maybe'],
    ] as const) {
      assert.throws(() => nvmeHealthThresholds('nvme-ssd', { [option]: value }), {
        name: 'ConfigError',
        code: 'INVALID_DRIVER_OPTION',
        message: new RegExp(`^nvme-ssd driver option ${option}: `),
      })
    }
  })
})

void describe('nvme-health: nvmeSmartLogHealth', () => {
  void it('runs nvme smart-log on the controller with a 10 s limit and judges it', async () => {
    const host = createFixtureHostProbe(dir)
    assert.deepEqual(await nvmeSmartLogHealth(host, 'nvme0', DEFAULTS), {
      state: 'failed',
      reason: 'NVMe critical warning: read-only (bit 3)',
    })
    assert.deepEqual(host.execs, [
      {
        command: 'nvme',
        args: ['smart-log', '/dev/nvme0', '-o', 'json'],
        options: { timeoutMs: NVME_SMART_LOG_TIMEOUT_MS },
      },
    ])
    assert.equal(NVME_SMART_LOG_TIMEOUT_MS, 10_000)
  })

  void it('no nvme-cli (COMMAND_NOT_FOUND) is no finding', async () => {
    const host = createFixtureHostProbe(dir)
    assert.equal(await nvmeSmartLogHealth(host, 'nvme9', DEFAULTS), undefined)
  })

  void it('nvme-cli failing or printing garbage is unknown, with the reason', async () => {
    const failing = execHost(() =>
      Promise.reject(
        new DriverError(
          'nvme smart-log /dev/nvme0 -o json failed (exit code 1): Permission\ndenied',
          {
            code: 'COMMAND_FAILED',
          },
        ),
      ),
    )
    assert.deepEqual(await nvmeSmartLogHealth(failing.host, 'nvme0', DEFAULTS), {
      state: 'unknown',
      reason:
        'nvme smart-log failed: nvme smart-log /dev/nvme0 -o json failed (exit code 1): Permission denied',
    })
    const slow = execHost(() =>
      Promise.reject(new DriverError(`nvme timed out after 10000 ms`, { code: 'COMMAND_TIMEOUT' })),
    )
    assert.deepEqual(await nvmeSmartLogHealth(slow.host, 'nvme0', DEFAULTS), {
      state: 'unknown',
      reason: 'nvme smart-log failed: nvme timed out after 10000 ms',
    })
    const garbage = execHost(() => Promise.resolve('NVMe status: INVALID_FIELD'))
    assert.deepEqual(await nvmeSmartLogHealth(garbage.host, 'nvme0', DEFAULTS), {
      state: 'unknown',
      reason: 'nvme smart-log failed: unreadable output (no critical_warning)',
    })
  })

  void it('keeps a long error short enough for health_reason', async () => {
    const noisy = execHost(() => Promise.reject(new Error('x'.repeat(5000))))
    const h = await nvmeSmartLogHealth(noisy.host, 'nvme0', DEFAULTS)
    assert.equal(h?.state, 'unknown')
    assert.ok(h.reason!.length <= 200, `${h.reason!.length}`)
  })

  void it('smart_log = false never runs the command', async () => {
    const never = execHost(() => Promise.resolve('{"critical_warning":8}'))
    assert.equal(
      await nvmeSmartLogHealth(never.host, 'nvme0', { ...DEFAULTS, smartLog: false }),
      undefined,
    )
    assert.deepEqual(never.calls, [])
  })
})
