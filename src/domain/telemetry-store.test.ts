import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { cleanDeviceSamples, DEVICE_SAMPLE_LIMITS } from './device-telemetry.js'
import { createTelemetryStore, DEVICE_GAUGE_NAMES, deviceGaugeSeries } from './telemetry-store.js'

const A = '0000:3b:00.0'
const B = '0000:d8:00.0'

void describe('device samples on the bus: cleanDeviceSamples', () => {
  void it('keeps canonical control paths and usable values only, one per device, sorted', () => {
    const raw = [
      { controlPath: B, values: { utilization_ratio: 1.7, power_watts: 70.23456, fan: 3 } },
      {
        controlPath: A,
        values: { temperature_celsius: 41, counters: { media_errors: 2, 'Bad Name': 1, neg: -1 } },
      },
      { controlPath: A, values: { temperature_celsius: 99 } },
      { controlPath: '3b:00.0', values: { power_watts: 1 } },
      { controlPath: '0000:5E:00.0', values: { power_watts: 1 } },
      { controlPath: '0000:af:00.0', values: { power_watts: Number.NaN, memory_used_bytes: -1 } },
      { controlPath: '0000:af:00.1', values: 'hot' },
      null,
      'x',
    ]
    assert.deepEqual(cleanDeviceSamples(raw), [
      { controlPath: A, values: { temperature_celsius: 41, counters: { media_errors: 2 } } },
      { controlPath: B, values: { utilization_ratio: 1, power_watts: 70.235 } },
    ])
    assert.deepEqual(cleanDeviceSamples({ controlPath: A }), [])
    assert.deepEqual(cleanDeviceSamples(undefined), [])
  })

  void it('bounds a message: 256 devices, 16 counters each', () => {
    const many = Array.from({ length: 1000 }, (_, i) => ({
      controlPath: `0000:${(i >> 3).toString(16).padStart(2, '0')}:00.${i & 7}`,
      values: {
        power_watts: i,
        counters: Object.fromEntries(Array.from({ length: 40 }, (_, j) => [`c${j}`, j])),
      },
    }))
    const kept = cleanDeviceSamples(many)
    assert.equal(kept.length, DEVICE_SAMPLE_LIMITS.devices)
    assert.equal(Object.keys(kept[0]!.values.counters!).length, DEVICE_SAMPLE_LIMITS.counters)
  })
})

void describe('telemetry store', () => {
  const sample = (controlPath: string, power: number) => ({
    controlPath,
    values: { power_watts: power },
  })

  void it('keeps the latest sample per device, and a host’s message replaces its samples wholesale', () => {
    const store = createTelemetryStore()
    store.put('h1', [sample(A, 1), sample(B, 2)], { receivedAt: 1000, periodMs: 10_000 })
    store.put('h2', [sample(A, 5)], { receivedAt: 1000, time: '2026-01-01T00:00:00.000Z' })
    store.put('h1', [sample(A, 3)], { receivedAt: 2000, periodMs: 10_000 })
    assert.deepEqual(
      store.samples(2000).map((s) => [s.host, s.controlPath, s.values.power_watts, s.receivedAt]),
      [
        ['h1', A, 3, 2000],
        ['h2', A, 5, 1000],
      ],
      'B is gone from h1: missing from its latest message',
    )
    assert.equal(store.samples(2000, 'h2')[0]!.time, '2026-01-01T00:00:00.000Z')
    assert.deepEqual(store.samples(2000, 'h3'), [])
    store.put('h2', [], { receivedAt: 3000 })
    assert.deepEqual(store.hosts(), ['h1'], 'a message without samples forgets the host')
  })

  void it('drops a host silent for three of its own periods (60 s when its messages state none)', () => {
    const store = createTelemetryStore()
    store.put('fast', [sample(A, 1)], { receivedAt: 0, periodMs: 1000 })
    store.put('old', [sample(A, 1)], { receivedAt: 0 })
    assert.deepEqual(store.prune(3000), [])
    assert.deepEqual(store.prune(3001), ['fast'])
    assert.deepEqual(
      store.samples(180_000).map((s) => s.host),
      ['old'],
    )
    assert.deepEqual(store.samples(180_001), [])
    assert.equal(store.has('old'), false)
  })

  void it('labels gauges with the device, lists every gauge, and leaves out unknown devices', () => {
    const store = createTelemetryStore()
    store.put(
      'h1',
      [
        {
          controlPath: A,
          values: {
            utilization_ratio: 0.5,
            ecc_correctable: 3,
            ecc_uncorrectable: 0,
            counters: { media_errors: 1 },
          },
        },
        sample(B, 9),
      ],
      { receivedAt: 0 },
    )
    const labels = { device: 'u-a', type: 'GPU', vendor: '10de' }
    const gauges = deviceGaugeSeries(store.samples(0), (host, path) =>
      host === 'h1' && path === A ? labels : undefined,
    )
    assert.deepEqual(
      gauges.map((g) => g.name),
      DEVICE_GAUGE_NAMES,
    )
    const base = { host: 'h1', ...labels }
    const of = (name: string) => gauges.find((g) => g.name === name)!.series
    assert.deepEqual(of('cyborg_device_utilization_ratio'), [{ labels: base, value: 0.5 }])
    assert.deepEqual(of('cyborg_device_ecc_errors'), [
      { labels: { ...base, kind: 'correctable' }, value: 3 },
      { labels: { ...base, kind: 'uncorrectable' }, value: 0 },
    ])
    assert.deepEqual(of('cyborg_device_counter'), [
      { labels: { ...base, name: 'media_errors' }, value: 1 },
    ])
    assert.deepEqual(of('cyborg_device_power_watts'), [], 'B has no device row: no series')
  })

  void it('ignores new hosts beyond maxHosts, and caps a period claimed absurdly long', () => {
    const store = createTelemetryStore({ maxHosts: 1 })
    store.put('h1', [sample(A, 1)], { receivedAt: 0, periodMs: 1e12 })
    store.put('h2', [sample(A, 1)], { receivedAt: 0 })
    assert.deepEqual(store.hosts(), ['h1'])
    assert.deepEqual(store.prune(3 * 86_400_000 + 1), ['h1'])
  })
})
