import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { buildTelemetry, collectStats, hasStats } from './telemetry.js'
import type { AcceleratorDriver } from '../drivers/driver.js'

const plain: AcceleratorDriver = { name: 'plain', deviceType: 'GPU', discover: async () => [] }

void describe('telemetry', () => {
  void it('detects the optional stats capability and bounds it in time', async () => {
    assert.equal(hasStats(plain), false)
    assert.equal(await collectStats(plain, { timeoutMs: 10 }), undefined)
    let aborted = false
    const hanging = {
      ...plain,
      stats: ({ signal }: { signal?: AbortSignal } = {}) =>
        new Promise<never>(() => signal?.addEventListener('abort', () => void (aborted = true))),
    }
    assert.equal(hasStats(hanging), true)
    assert.equal(await collectStats(hanging, { timeoutMs: 20 }), undefined)
    assert.ok(aborted, 'the driver is told to stop')
    const odd = { ...plain, stats: async () => [1, 2] as never }
    assert.equal(await collectStats(odd, { timeoutMs: 20 }), undefined)
  })

  void it('reports a failed driver with no devices, and totals the rest', () => {
    const message = buildTelemetry(
      'h1',
      new Date('2026-01-02T03:04:05.000Z'),
      [
        { driver: 'a', ok: true, deviceCount: 3, durationMs: 1.5 },
        { driver: 'b', ok: false, deviceCount: 0, durationMs: 60000 },
      ],
      new Map([['a', { memoryUsedMiB: 512 }]]),
    )
    assert.deepEqual(message, {
      version: 1,
      host: 'h1',
      time: '2026-01-02T03:04:05.000Z',
      deviceCount: 3,
      drivers: [
        { name: 'a', ok: true, deviceCount: 3, durationMs: 1.5, stats: { memoryUsedMiB: 512 } },
        { name: 'b', ok: false, deviceCount: 0, durationMs: 60000 },
      ],
    })
  })
})
