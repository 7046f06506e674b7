import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  buildTelemetry,
  collectDeviceStats,
  collectStats,
  hasDeviceStats,
  hasStats,
} from './telemetry.js'
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
      version: 2,
      host: 'h1',
      time: '2026-01-02T03:04:05.000Z',
      deviceCount: 3,
      drivers: [
        { name: 'a', ok: true, deviceCount: 3, durationMs: 1.5, stats: { memoryUsedMiB: 512 } },
        { name: 'b', ok: false, deviceCount: 0, durationMs: 60000 },
      ],
      devices: [],
    })
  })

  void it('collects per-device samples: cleaned, bounded in time, none from a driver without them', async () => {
    assert.equal(hasDeviceStats(plain), false)
    assert.deepEqual(await collectDeviceStats(plain, { timeoutMs: 10 }), [])
    const sampling = {
      ...plain,
      deviceStats: async () => [
        { controlPath: '0000:3b:00.0', values: { utilization_ratio: 0.5, bogus: 1 } },
        { controlPath: 'not-an-address', values: { power_watts: 1 } },
      ],
    }
    assert.equal(hasDeviceStats(sampling), true)
    assert.deepEqual(await collectDeviceStats(sampling, { timeoutMs: 50 }), [
      { controlPath: '0000:3b:00.0', values: { utilization_ratio: 0.5 } },
    ])
    const hanging = { ...plain, deviceStats: () => new Promise<never>(() => {}) }
    assert.deepEqual(await collectDeviceStats(hanging, { timeoutMs: 20 }), [])
    const throwing = {
      ...plain,
      deviceStats: () => {
        throw new Error('no')
      },
    }
    assert.deepEqual(await collectDeviceStats(throwing, { timeoutMs: 20 }), [])
  })

  void it('version 2 carries the period and the samples of every driver, one per device', () => {
    const message = buildTelemetry('h1', new Date(0), [], new Map(), {
      periodMs: 60_000,
      devices: [
        { controlPath: '0000:d8:00.0', values: { power_watts: 2 } },
        { controlPath: '0000:3b:00.0', values: { power_watts: 1 } },
        { controlPath: '0000:3b:00.0', values: { power_watts: 3 } },
      ],
    })
    assert.equal(message.version, 2)
    assert.equal(message.periodMs, 60_000)
    assert.deepEqual(message.devices, [
      { controlPath: '0000:3b:00.0', values: { power_watts: 1 } },
      { controlPath: '0000:d8:00.0', values: { power_watts: 2 } },
    ])
  })
})
