import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import {
  buildNvmeDevices,
  createNvmeSsdDriver,
  parseSysfsString,
  readNvmeController,
  ssdTraits,
  type NvmeController,
} from './nvme-ssd.js'
import { createFixtureHostProbe } from './fixture-host-probe.js'
import { createMemoryHostProbe } from './driver-contract.case.js'

const fixture = (c: string): string =>
  new URL(`./__fixtures__/nvme-ssd/${c}`, import.meta.url).pathname

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
