import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import fc from 'fast-check'
import {
  buildNvmeDevices,
  byControllerNumber,
  createNvmeSsdDriver,
  parseSysfsString,
  readNvmeController,
  ssdTraits,
  type NvmeController,
} from './nvme-ssd.js'
import {
  createFixtureHostProbe,
  garbledFixtureHostProbe,
} from '../host-probe/fixture-host-probe.js'
import { createMemoryHostProbe } from '../driver-contract.case.js'

const fixture = (c: string): string =>
  new URL(`../__fixtures__/nvme-ssd/${c}`, import.meta.url).pathname

const ctrl = (
  name: string,
  address: string,
  extra: Partial<NvmeController> = {},
): NvmeController => ({
  name,
  address,
  vendorId: '144d',
  productId: 'a80a',
  model: 'Samsung SSD 980 PRO 1TB',
  serial: 'S1',
  firmwareRev: 'F1',
  ...extra,
})

void describe('nvme-ssd: parsers', () => {
  void it('trims the kernel padding and control characters of string attributes', () => {
    assert.equal(
      parseSysfsString('Samsung SSD 980 PRO 1TB                 \n'),
      'Samsung SSD 980 PRO 1TB',
    )
    assert.equal(parseSysfsString('Micron\u0001_7450\u0000\n'), 'Micron _7450')
    assert.equal(parseSysfsString(undefined), '')
  })

  void it('names traits by vendor name or hex id and by product id', () => {
    assert.deepEqual(ssdTraits('144d', 'a80a'), [
      'OWNER_CYBORG',
      'CUSTOM_SSD_SAMSUNG',
      'CUSTOM_SSD_PRODUCT_ID_A80A',
    ])
    assert.deepEqual(ssdTraits('1bd4', '0001'), [
      'OWNER_CYBORG',
      'CUSTOM_SSD_INSPUR',
      'CUSTOM_SSD_PRODUCT_ID_0001',
    ])
    assert.deepEqual(ssdTraits('1d0f', '8061'), [
      'OWNER_CYBORG',
      'CUSTOM_SSD_1D0F',
      'CUSTOM_SSD_PRODUCT_ID_8061',
    ])
  })

  void it('reads a controller from the typical fixture; a fabrics controller is skipped', async () => {
    const deps = { host: createFixtureHostProbe(fixture('typical')), hostname: 'h' }
    assert.deepEqual(await readNvmeController(deps, '/sys/class/nvme', 'nvme0'), {
      name: 'nvme0',
      address: '0000:5e:00.0',
      vendorId: '144d',
      productId: 'a80a',
      model: 'Samsung SSD 980 PRO 1TB',
      serial: 'S5GXNF0R123456A',
      firmwareRev: '5B2QGXA7',
    })
    assert.equal(await readNvmeController(deps, '/sys/class/nvme', 'nvme3'), undefined)
    assert.equal(await readNvmeController(deps, '/sys/class/nvme', 'nvme-subsys0'), undefined)
  })
  void it("orders the kernel's controller names as the numeric 'en' collation does (property)", () => {
    const name = fc.oneof(
      fc.nat({ max: 300 }).map((n) => ({ name: `nvme${n}` })),
      fc.constantFrom({ name: 'nvme' }, { name: 'nvme0n1' }, { name: 'nvme-fabrics' }),
    )
    fc.assert(
      fc.property(name, name, (a, b) => {
        const icu = a.name.localeCompare(b.name, 'en', { numeric: true })
        assert.equal(Math.sign(byControllerNumber(a, b)), Math.sign(icu), `${a.name} ${b.name}`)
      }),
    )
  })
})

void describe('nvme-ssd: buildNvmeDevices', () => {
  void it('gives one SSD per PCI function, in address order, first controller by number', () => {
    const devices = buildNvmeDevices('h', [
      ctrl('nvme10', '0000:af:00.0', { serial: 'second' }),
      ctrl('nvme2', '0000:af:00.0'),
      ctrl('nvme1', '0000:5e:00.0', { model: '' }),
    ])
    assert.deepEqual(
      devices.map((d) => [
        d.deployables[0]!.name,
        d.model,
        (d.vendorBoardInfo as { controller: string }).controller,
      ]),
      [
        ['h_0000:5e:00.0', 'a80a', 'nvme1'],
        ['h_0000:af:00.0', 'Samsung SSD 980 PRO 1TB', 'nvme2'],
      ],
    )
    assert.equal(devices[0]!.type, 'SSD')
    assert.deepEqual(devices[0]!.deployables[0]!.attributes, [
      { key: 'rc', value: 'CUSTOM_SSD' },
      { key: 'trait0', value: 'OWNER_CYBORG' },
      { key: 'trait1', value: 'CUSTOM_SSD_SAMSUNG' },
      { key: 'trait2', value: 'CUSTOM_SSD_PRODUCT_ID_A80A' },
    ])
  })
})

void describe('nvme-ssd: discover()', () => {
  void it('reports the typical host (details in expected.json)', async () => {
    const devices = await createNvmeSsdDriver({
      host: createFixtureHostProbe(fixture('typical')),
      hostname: 'h',
    }).discover()
    assert.deepEqual(
      devices.map((d) => d.deployables[0]!.name),
      ['h_0000:00:04.0', 'h_0000:5e:00.0', 'h_0000:d8:00.0'],
    )
  })

  void it('stops on an aborted signal', async () => {
    const driver = createNvmeSsdDriver({ host: createMemoryHostProbe({}), hostname: 'h' })
    await assert.rejects(driver.discover({ signal: AbortSignal.abort() }), { code: 'ABORTED' })
  })

  void it('never throws on random bytes in sysfs files (property)', async () => {
    const random = fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b).toString('latin1'))
    const text = (...valid: string[]): fc.Arbitrary<string> =>
      fc.oneof(random, fc.constantFrom(...valid))
    const row = fc.record({
      name: fc.oneof(
        fc.constantFrom('nvme0', 'nvme1', 'nvme12'),
        fc
          .string({ maxLength: 8 })
          .filter((s) => s !== '' && !s.includes('/') && s !== '.' && s !== '..'),
      ),
      uevent: text('PCI_SLOT_NAME=0000:5e:00.0\n', 'PCI_SLOT_NAME=0000:af:00.0\n'),
      vendor: text('0x144d\n', '0x8086\n'),
      device: text('0xa80a\n'),
      model: random,
      serial: random,
    })
    await fc.assert(
      fc.asyncProperty(fc.array(row, { maxLength: 4 }), async (rows) => {
        const files: Record<string, string> = {}
        for (const r of rows) {
          const d = `/sys/class/nvme/${r.name}`
          Object.assign(files, {
            [`${d}/device/uevent`]: r.uevent,
            [`${d}/device/vendor`]: r.vendor,
            [`${d}/device/device`]: r.device,
            [`${d}/model`]: r.model,
            [`${d}/serial`]: r.serial,
          })
        }
        assert.ok(
          Array.isArray(
            await createNvmeSsdDriver({
              host: createMemoryHostProbe(files),
              hostname: 'h',
            }).discover(),
          ),
        )
      }),
      { numRuns: 150 },
    )
  })
})

void describe('nvme-ssd: health', () => {
  const expected = (c: string): unknown =>
    JSON.parse(readFileSync(fixture(`${c}/expected.json`), 'utf8'))

  void it('smart-log: SMART log and PCIe findings per controller (expected.json)', async () => {
    const host = createFixtureHostProbe(fixture('smart-log'))
    const devices = await createNvmeSsdDriver({ host, hostname: 'compute-1' }).discover()
    assert.deepEqual(devices, expected('smart-log'))
    assert.deepEqual(
      devices.map((d) => [(d.vendorBoardInfo as { controller: string }).controller, d.health]),
      [
        [
          'nvme3',
          {
            state: 'unknown',
            reason: 'nvme smart-log failed: unreadable output (no critical_warning)',
          },
        ],
        ['nvme0', { state: 'failed', reason: 'NVMe critical warning: read-only (bit 3)' }],
        ['nvme4', undefined],
        [
          'nvme1',
          {
            state: 'degraded',
            reason: '1200 correctable PCIe AER errors; 95% of rated endurance used',
          },
        ],
        [
          'nvme2',
          {
            state: 'degraded',
            reason: 'NVMe critical warning: temperature outside threshold (bit 1)',
          },
        ],
      ],
    )
    assert.deepEqual(
      host.execs.map((e) => [e.args[1], e.options?.timeoutMs]).sort(),
      ['nvme0', 'nvme1', 'nvme2', 'nvme3', 'nvme4'].map((n) => [`/dev/${n}`, 10_000]),
    )
  })

  void it('typical: without nvme-cli (no recording) nothing is added', async () => {
    const host = createFixtureHostProbe(fixture('typical'))
    const devices = await createNvmeSsdDriver({ host, hostname: 'compute-1' }).discover()
    assert.deepEqual(devices, expected('typical'))
    assert.equal(host.execs.length, 3) // one per PCIe controller, each COMMAND_NOT_FOUND
  })

  void it('options: thresholds move, 0 turns a check off, smart_log = false runs nothing', async () => {
    const run = async (options: Record<string, string>) => {
      const host = createFixtureHostProbe(fixture('smart-log'))
      const devices = await createNvmeSsdDriver({ host, hostname: 'h' }, options).discover()
      return { host, health: devices.map((d) => d.health) }
    }
    const worn = await run({ percentage_used_failed: '95', aer_correctable_degraded: '0' })
    assert.deepEqual(worn.health[3], { state: 'failed', reason: '95% of rated endurance used' })
    const quiet = await run({ smart_log: 'false', aer_correctable_degraded: '2000' })
    assert.deepEqual(quiet.health, [undefined, undefined, undefined, undefined, undefined])
    assert.equal(quiet.host.execs.length, 0)
  })

  void it('a bad health option is a ConfigError at creation, naming driver and option', () => {
    const host = createMemoryHostProbe({})
    for (const [option, value] of [
      ['aer_fatal_failed', 'one'],
      ['link_check', 'speed'],
      ['media_errors_degraded', '-2'],
      ['percentage_used_degraded', '9O'],
    ] as const) {
      assert.throws(() => createNvmeSsdDriver({ host, hostname: 'h' }, { [option]: value }), {
        name: 'ConfigError',
        message: new RegExp(`^nvme-ssd driver option ${option}: `),
      })
    }
  })

  void it('never throws on garbage in the smart-log fixture (property)', async () => {
    const junk = fc.oneof(
      fc.string({ maxLength: 60 }),
      fc.json(),
      fc.constantFrom('{"critical_warning":8}', 'TOTAL_ERR_FATAL 3\n', '8.0 GT/s PCIe', ''),
    )
    await fc.assert(
      fc.asyncProperty(fc.array(junk, { minLength: 1, maxLength: 6 }), async (contents) => {
        const devices = await createNvmeSsdDriver({
          host: garbledFixtureHostProbe(fixture('smart-log'), contents),
          hostname: 'h',
        }).discover()
        for (const d of devices)
          assert.ok(d.health === undefined || (d.health.reason ?? '').length <= 255)
      }),
      { numRuns: 60 },
    )
  })
})
