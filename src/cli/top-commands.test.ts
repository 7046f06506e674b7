import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ageCell, intervalMs, memoryCell, topRows } from './top-commands.js'

test('top rows: one per device, values formatted, absent ones shown as -', () => {
  const devices = [
    {
      hostname: 'c1',
      control_path: '0000:3b:00.0',
      device_uuid: 'u1',
      type: 'GPU',
      vendor: '10de',
      age_seconds: 12,
      values: {
        utilization_ratio: 0.456,
        memory_used_bytes: 4215 * 1024 ** 2,
        memory_total_bytes: 40960 * 1024 ** 2,
        temperature_celsius: 41.4,
        power_watts: 70.23,
        ecc_correctable: 3,
        ecc_uncorrectable: 0,
      },
    },
    {
      hostname: 'c2',
      control_path: '0000:5e:00.0',
      device_uuid: null,
      type: null,
      vendor: null,
      age_seconds: 300,
      values: { wear_ratio: 0.07, counters: { media_errors: 0 } },
    },
  ]
  assert.deepEqual(topRows(devices), [
    {
      host: 'c1',
      device: 'u1',
      type: 'GPU',
      vendor: '10de',
      util: '46%',
      memory: '4.1/40.0 GiB',
      temp: '41 C',
      power: '70.2 W',
      ecc: '3/0',
      wear: '-',
      age: '12s',
    },
    {
      host: 'c2',
      device: '0000:5e:00.0',
      type: '-',
      vendor: '-',
      util: '-',
      memory: '-',
      temp: '-',
      power: '-',
      ecc: '-',
      wear: '7%',
      age: '5m',
    },
  ])
})

test('top cells and --interval', () => {
  assert.equal(memoryCell(512 * 1024 ** 2, undefined), '512.0/- MiB')
  assert.equal(memoryCell(undefined, 2 * 1024 ** 3), '-/2.0 GiB')
  assert.equal(ageCell(7200), '2h')
  assert.equal(ageCell(undefined), '-')
  assert.equal(intervalMs('2.5'), 2500)
  assert.throws(() => intervalMs('0'), /--interval must be a number of seconds, from 0.2 to 3600/)
  assert.throws(() => intervalMs('1e9'), /from 0\.2 to 3600, got '1e9'/)
  assert.throws(() => intervalMs('soon'), /got 'soon'/)
})
