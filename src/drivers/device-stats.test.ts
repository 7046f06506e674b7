/**
 * Device telemetry of the drivers (issue 16): the parsers over the recorded outputs and sysfs
 * fixtures, each driver's `deviceStats()` after a discovery (nvidia-smi and nvme smart-log run once
 * per period, shared with discovery), and a contract over every fixture of every driver that offers
 * samples: no throw, only the devices discovery found, values that survive cleaning.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import fc from 'fast-check'
import { DRIVERS } from './index.js'
import { createFixtureHostProbe } from './host-probe/fixture-host-probe.js'
import { CONTRACT_HOSTNAME } from './driver-contract.case.js'
import { parseNvidiaSmiSamples } from './nvidia-gpu/nvidia-telemetry.js'
import { parseNvmeSmartLogValues } from './nvme-ssd/nvme-telemetry.js'
import { parseSysfsNumber, readFpgaSample } from './fpga/fpga-telemetry.js'
import { fakeSampleValues } from './fake/fake-telemetry.js'
import { createFakeDriver } from './fake/fake.js'
import { createNvidiaGpuDriver } from './nvidia-gpu/nvidia-gpu.js'
import { createNvmeSsdDriver } from './nvme-ssd/nvme-ssd.js'
import { createIntelFpgaDriver } from './fpga/intel-fpga.js'
import type { AcceleratorDriver } from './driver.js'
import { controlPathAddress } from '../domain/inventory/inventory.js'
import {
  cleanDeviceSamples,
  type DeviceSample,
  type DeviceStatsCapability,
} from '../domain/device-telemetry.js'

const FIXTURES = path.join(import.meta.dirname, '__fixtures__')
const fixture = (...parts: string[]) => path.join(FIXTURES, ...parts)
const read = (...parts: string[]) => readFileSync(fixture(...parts), 'utf8')
const MIB = 1024 * 1024
const deps = (dir: string) => {
  const host = createFixtureHostProbe(dir)
  return { host, deps: { host, hostname: CONTRACT_HOSTNAME } }
}

const gpu = (id: string, body: string) =>
  `<nvidia_smi_log><gpu id="${id}">${body}</gpu></nvidia_smi_log>`

void describe('nvidia-gpu telemetry: parseNvidiaSmiSamples', () => {
  void it('reads utilisation, memory, temperature, power and ECC of the recorded driver-535 output', () => {
    assert.deepEqual(parseNvidiaSmiSamples(read('nvidia-gpu', 'ecc', 'nvidia-smi-q-x.xml')), [
      {
        controlPath: '0000:3b:00.0',
        values: {
          utilization_ratio: 0.45,
          memory_used_bytes: 4215 * MIB,
          memory_total_bytes: 40960 * MIB,
          temperature_celsius: 41,
          power_watts: 70.23,
          ecc_correctable: 3,
          ecc_uncorrectable: 2,
        },
      },
      {
        controlPath: '0000:d8:00.0',
        values: {
          utilization_ratio: 0,
          memory_used_bytes: 4 * MIB,
          memory_total_bytes: 40960 * MIB,
          temperature_celsius: 34,
          power_watts: 36.12,
          ecc_correctable: 0,
          ecc_uncorrectable: 0,
        },
      },
    ])
  })

  void it("never takes a MIG instance's or a process's memory for the GPU's", () => {
    // The mig recording shows memory per MIG instance only.
    assert.deepEqual(parseNvidiaSmiSamples(read('nvidia-gpu', 'mig', 'nvidia-smi-q-x.xml')), [])
    const text = gpu(
      '00000000:3B:00.0',
      `<mig_devices><mig_device><fb_memory_usage><total>9984 MiB</total><used>13 MiB</used></fb_memory_usage></mig_device></mig_devices>
       <fb_memory_usage><total>40 GiB</total><used>2048 MiB</used></fb_memory_usage>`,
    )
    assert.deepEqual(parseNvidiaSmiSamples(text)[0]!.values, {
      memory_used_bytes: 2048 * MIB,
      memory_total_bytes: 40 * 1024 * MIB,
    })
  })

  void it('reads older and newer layouts: power_readings, average or instant draw, single_bit ECC; N/A is no value', () => {
    const legacy = gpu(
      '0000:5e:00.0',
      `<utilization><gpu_util>N/A</gpu_util></utilization>
       <ecc_errors><volatile><single_bit><device_memory>4</device_memory><total>4</total></single_bit>
       <double_bit><total>1</total></double_bit></volatile></ecc_errors>
       <temperature><gpu_temp>N/A</gpu_temp></temperature>
       <power_readings><power_draw>75.5 W</power_draw></power_readings>`,
    )
    assert.deepEqual(parseNvidiaSmiSamples(legacy), [
      {
        controlPath: '0000:5e:00.0',
        values: { power_watts: 75.5, ecc_correctable: 4, ecc_uncorrectable: 1 },
      },
    ])
    const newer = (readings: string) =>
      parseNvidiaSmiSamples(
        gpu('0000:5e:00.0', `<gpu_power_readings>${readings}</gpu_power_readings>`),
      )
    assert.deepEqual(
      newer(
        '<average_power_draw>61.1 W</average_power_draw><instant_power_draw>90 W</instant_power_draw>',
      )[0]!.values,
      { power_watts: 61.1 },
    )
    assert.deepEqual(
      newer('<power_draw>N/A</power_draw><instant_power_draw>90.00 W</instant_power_draw>')[0]!
        .values,
      { power_watts: 90 },
    )
    assert.deepEqual(newer('<power_draw>N/A</power_draw>'), [])
  })

  void it('never throws, whatever nvidia-smi printed', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (a, b) => {
        const samples = parseNvidiaSmiSamples(
          gpu('0000:3b:00.0', `<utilization>${a}</utilization>${b}`),
        )
        assert.ok(samples.length <= 1)
      }),
    )
    assert.deepEqual(
      parseNvidiaSmiSamples('<nvidia_smi_log><gpu id="00000000:3B:00.0"><utilization>'),
      [],
    )
  })
})

void describe('nvidia-gpu telemetry: one nvidia-smi per period', () => {
  const smiRuns = (host: ReturnType<typeof createFixtureHostProbe>) =>
    host.execs.filter((e) => e.command === 'nvidia-smi').length

  void it('reuses the run of the discovery before it, and runs its own only when no discovery ran', async () => {
    const { host, deps: d } = deps(fixture('nvidia-gpu', 'ecc'))
    const driver = createNvidiaGpuDriver(d)
    await driver.discover()
    const samples = await driver.deviceStats()
    assert.deepEqual(
      samples.map((s) => [s.controlPath, s.values.utilization_ratio]),
      [
        ['0000:3b:00.0', 0.45],
        ['0000:d8:00.0', 0],
      ],
    )
    assert.equal(smiRuns(host), 1, 'discovery and telemetry share one run')
    await driver.deviceStats()
    assert.equal(smiRuns(host), 2, 'a period without discovery runs it once')
  })

  void it('runs nothing with nvidia_smi = false, or on a host without GPUs', async () => {
    const off = deps(fixture('nvidia-gpu', 'ecc'))
    const driver = createNvidiaGpuDriver(off.deps, { nvidia_smi: 'false' })
    await driver.discover()
    assert.deepEqual(await driver.deviceStats(), [])
    assert.equal(smiRuns(off.host), 0)
    const empty = deps(fixture('nvidia-gpu', 'empty'))
    const none = createNvidiaGpuDriver(empty.deps)
    await none.discover()
    assert.deepEqual(await none.deviceStats(), [])
    assert.equal(smiRuns(empty.host), 0)
  })
})

void describe('nvme-ssd telemetry', () => {
  const smartLog = (n: number) =>
    read('nvme-ssd', 'smart-log', `nvme-smart-log-_dev_nvme${n}-o-json.json`)

  void it('reads the temperature in kelvins as °C, percent_used as wear and media_errors as a counter', () => {
    assert.deepEqual(parseNvmeSmartLogValues(smartLog(0)), {
      temperature_celsius: 37.85,
      wear_ratio: 0.07,
      counters: { media_errors: 3 },
    })
    assert.deepEqual(parseNvmeSmartLogValues(smartLog(1)), {
      temperature_celsius: 31.85,
      wear_ratio: 0.95,
      counters: { media_errors: 0 },
    })
    assert.equal(parseNvmeSmartLogValues(smartLog(3)), undefined, 'truncated output')
    assert.deepEqual(parseNvmeSmartLogValues('{"temperature": 0, "percentage_used": 120}'), {
      wear_ratio: 1.2,
    })
    assert.equal(parseNvmeSmartLogValues('Permission denied'), undefined)
    fc.assert(fc.property(fc.string(), (s) => void parseNvmeSmartLogValues(s)))
  })

  void it('samples each drive from the smart-log its discovery read: one run per drive and period', async () => {
    const { host, deps: d } = deps(fixture('nvme-ssd', 'smart-log'))
    const driver = createNvmeSsdDriver(d)
    const devices = await driver.discover()
    const byController = new Map(
      devices.map((x) => [
        String((x.vendorBoardInfo as Record<string, unknown>).controller),
        controlPathAddress(x.controlPath),
      ]),
    )
    const samples = await driver.deviceStats()
    assert.deepEqual(
      samples.map((s) => s.controlPath).sort(),
      ['nvme0', 'nvme1', 'nvme2', 'nvme4'].map((c) => byController.get(c)).sort(),
    )
    assert.deepEqual(samples.find((s) => s.controlPath === byController.get('nvme2'))!.values, {
      temperature_celsius: 78.85,
      wear_ratio: 0.01,
      counters: { media_errors: 0 },
    })
    assert.equal(host.execs.filter((e) => e.command === 'nvme').length, devices.length)
    const off = deps(fixture('nvme-ssd', 'smart-log'))
    const quiet = createNvmeSsdDriver(off.deps, { smart_log: 'false' })
    await quiet.discover()
    assert.deepEqual(await quiet.deviceStats(), [])
    assert.equal(off.host.execs.length, 0)
  })
})

void describe('intel-fpga telemetry', () => {
  void it('reads the FME: DFL hwmon (millidegrees, microwatts) and the OPAE driver (°C, W)', async () => {
    const { host } = deps(fixture('intel-fpga', 'typical'))
    assert.deepEqual(await readFpgaSample(host, '0000:3b:00.0'), {
      controlPath: '0000:3b:00.0',
      values: { temperature_celsius: 41, power_watts: 27 },
    })
    assert.deepEqual(await readFpgaSample(host, '0000:5e:00.0'), {
      controlPath: '0000:5e:00.0',
      values: { temperature_celsius: 38.5, power_watts: 24.5 },
    })
    assert.equal(parseSysfsNumber(' 38500\n'), 38500)
    assert.equal(parseSysfsNumber('hot'), undefined)
  })

  void it('samples the cards of its last discovery; none before it', async () => {
    const { deps: d } = deps(fixture('intel-fpga', 'typical'))
    const driver = createIntelFpgaDriver(d)
    assert.deepEqual(await driver.deviceStats(), [])
    await driver.discover()
    assert.deepEqual(
      (await driver.deviceStats()).map((s) => s.controlPath),
      ['0000:3b:00.0', '0000:5e:00.0'],
    )
  })
})

void describe('fake telemetry', () => {
  void it('reports the sample_* options as its device’s values, and nothing without them', async () => {
    const d = { host: createFixtureHostProbe('/nonexistent'), hostname: 'h1' }
    assert.deepEqual(await createFakeDriver(d).deviceStats(), [])
    const driver = createFakeDriver(d, {
      sample_utilization_ratio: '0.42',
      sample_memory_used_bytes: '1024',
      sample_counter_jobs: '7',
    })
    assert.deepEqual(await driver.deviceStats(), [
      {
        controlPath: '0000:0c:00.0',
        values: { utilization_ratio: 0.42, memory_used_bytes: 1024, counters: { jobs: 7 } },
      },
    ])
    assert.throws(() => fakeSampleValues({ sample_utilization_ratio: 'busy' }), {
      name: 'InvalidInputError',
      message: "Invalid input for field 'sample_utilization_ratio': must be a number",
    })
    assert.throws(() => fakeSampleValues({ sample_fan: '1' }), /sample_fan': must be one of/)
  })
})

void describe('device telemetry contract: every driver that offers samples, every fixture', () => {
  const offers = (d: AcceleratorDriver): d is AcceleratorDriver & DeviceStatsCapability =>
    typeof (d as Partial<DeviceStatsCapability>).deviceStats === 'function'
  for (const [name, factory] of Object.entries(DRIVERS)) {
    const probe = { host: createFixtureHostProbe('/nonexistent'), hostname: CONTRACT_HOSTNAME }
    if (!offers(factory(probe, {}))) continue
    const base = fixture(name)
    for (const c of caseDirs(base)) {
      void it(`${name}/${c}: no throw, only discovered devices, clean values`, async () => {
        const dir = path.join(base, c)
        let options: Record<string, string> = {}
        try {
          options = JSON.parse(read(name, c, 'options.json')) as Record<string, string>
        } catch {
          // no options for this case
        }
        const driver = factory(
          { host: createFixtureHostProbe(dir), hostname: CONTRACT_HOSTNAME },
          options,
        )
        assert.ok(offers(driver))
        const devices = await driver.discover()
        const samples: DeviceSample[] = await driver.deviceStats()
        const paths = new Set(devices.map((x) => controlPathAddress(x.controlPath)))
        for (const s of samples)
          assert.ok(paths.has(s.controlPath), `${s.controlPath} was discovered`)
        assert.deepEqual(
          cleanDeviceSamples(samples).map((s) => s.controlPath),
          samples.map((s) => s.controlPath).sort(),
        )
      })
    }
  }
})

/** The case directories of a driver's fixtures; none when it has no fixture directory. */
function caseDirs(dir: string): string[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .filter((n) => statSync(path.join(dir, n)).isDirectory())
    .sort()
}
