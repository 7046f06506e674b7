import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import fc from 'fast-check'
import {
  createIntelQatDriver,
  defaultQatServices,
  groupQatPfs,
  parseQatServices,
  qatDevice,
  qatServiceTrait,
} from './intel-qat.js'
import {
  createFixtureHostProbe,
  garbledFixtureHostProbe as garbled,
} from '../host-probe/fixture-host-probe.js'
import { parseVirtfnSlots, type PciFunction } from '../pci/pci-sysfs.js'

const fixtures = path.join(import.meta.dirname, '..', '__fixtures__', 'intel-qat')
const expected = (c: string): unknown =>
  JSON.parse(readFileSync(path.join(fixtures, c, 'expected.json'), 'utf8'))
const discover = (c: string) =>
  createIntelQatDriver({
    host: createFixtureHostProbe(path.join(fixtures, c)),
    hostname: 'compute-1',
  }).discover()

const junk = fc.oneof(
  fc.uint8Array({ maxLength: 48 }).map((b) => Buffer.from(b).toString('latin1')),
  fc.string({ maxLength: 48 }),
  fc.constantFrom(
    '0x8086\n',
    '0x37c8\n',
    '0x4940\n',
    '0x37c9',
    'PCI_SLOT_NAME=0000:3d:01.0\n',
    'PCI_SLOT_NAME=0000:3d:00.0',
    'sym;asym;dc',
    '',
  ),
)

void describe('intel-qat parsers', () => {
  void it('parses cfg_services into known services in canonical order', () => {
    assert.deepEqual(parseQatServices('sym;asym\n'), ['sym', 'asym'])
    assert.deepEqual(parseQatServices('dc;asym'), ['asym', 'dc'])
    assert.deepEqual(parseQatServices('DCC'), ['dcc'])
    assert.deepEqual(parseQatServices('crypto;zip'), [])
    assert.deepEqual(parseQatServices(''), [])
    assert.equal(qatServiceTrait('asym'), 'CUSTOM_QAT_ASYM')
  })

  void it('defaults: GEN4 sym;asym, older generations every service', () => {
    assert.deepEqual(defaultQatServices('4940'), ['sym', 'asym'])
    assert.deepEqual(defaultQatServices('37c8'), ['sym', 'asym', 'dc'])
  })

  void it('orders virtfn entries numerically and skips garbage', () => {
    const slot = (a: string) => `DRIVER=x\nPCI_SLOT_NAME=${a}\n`
    assert.deepEqual(
      parseVirtfnSlots([
        { name: 'virtfn10', uevent: slot('0000:3d:02.2') },
        { name: 'virtfn2', uevent: slot('0000:3d:01.2') },
        { name: 'virtfnX', uevent: slot('0000:3d:01.7') },
        { name: 'virtfn3', uevent: 'garbage' },
        { name: 'virtfn4', uevent: undefined },
      ]),
      ['0000:3d:01.2', '0000:3d:02.2'],
    )
  })

  void it('never counts a VF twice, nor a PF as a VF', () => {
    const fn = (address: string, physfn?: string): PciFunction => ({
      address,
      pci: { domain: '0000', bus: '3d', device: '00', function: '0' },
      vendorId: '8086',
      productId: '37c8',
      classCode: '',
      ...(physfn === undefined ? {} : { physfn }),
    })
    const a = fn('0000:3d:00.0')
    const b = fn('0000:3f:00.0')
    const vf = fn('0000:3d:01.0', '0000:3d:00.0')
    const pfs = groupQatPfs(
      [
        { fn: a, services: ['sym'], virtfn: ['0000:3d:01.0', '0000:3d:01.0', '0000:3f:00.0'] },
        { fn: b, services: ['sym'], virtfn: ['0000:3d:01.0'] },
      ],
      [a, b, vf],
    )
    assert.deepEqual(
      pfs.map((p) => p.vfs),
      [['0000:3d:01.0'], []],
    )
  })

  void it('one deployable per VF, each with one accelerator and one PCI handle', () => {
    const dev = qatDevice(
      {
        address: '0000:3d:00.0',
        productId: '37c8',
        services: ['sym', 'dc'],
        vfs: ['0000:3d:01.0', '0000:3d:01.1'],
      },
      'h',
    )
    assert.equal(dev.type, 'QAT')
    assert.deepEqual(
      dev.deployables.map((d) => [d.name, d.numAccelerators, d.attachHandles.length]),
      [
        ['h_0000:3d:01.0', 1, 1],
        ['h_0000:3d:01.1', 1, 1],
      ],
    )
    assert.deepEqual(dev.deployables[0]!.attributes, [
      { key: 'rc', value: 'CUSTOM_QAT' },
      { key: 'trait0', value: 'CUSTOM_QAT_SYM' },
      { key: 'trait1', value: 'CUSTOM_QAT_DC' },
    ])
  })
})

void describe('intel-qat discover', () => {
  for (const c of ['typical', 'pf-vfs', 'malformed', 'empty', 'state-down']) {
    void it(`${c}: matches expected.json`, async () => {
      assert.deepEqual(await discover(c), expected(c))
    })
  }

  void it('pf-vfs: VFs listed at the top level are not reported again', async () => {
    const names = (await discover('pf-vfs')).flatMap((d) => d.deployables.map((x) => x.name))
    assert.equal(new Set(names).size, names.length)
    assert.equal(names.length, 6)
  })

  void it('honours an aborted signal', async () => {
    const driver = createIntelQatDriver({
      host: createFixtureHostProbe(path.join(fixtures, 'typical')),
      hostname: 'h',
    })
    await assert.rejects(driver.discover({ signal: AbortSignal.abort() }), { code: 'ABORTED' })
  })

  void it('never throws on random file contents', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('typical', 'pf-vfs', 'malformed', 'state-down'),
        fc.array(junk, { minLength: 1, maxLength: 8 }),
        async (c, contents) => {
          const devices = await createIntelQatDriver({
            host: garbled(path.join(fixtures, c), contents),
            hostname: 'h',
          }).discover()
          assert.ok(Array.isArray(devices))
        },
      ),
      { numRuns: 60 },
    )
  })
})

void describe('intel-qat health', () => {
  const health = async (options: Record<string, string> = {}) =>
    (
      await createIntelQatDriver(
        { host: createFixtureHostProbe(path.join(fixtures, 'state-down')), hostname: 'h' },
        options,
      ).discover()
    ).map((d) => [d.deployables.map((x) => x.name), d.health])

  void it('state-down: a PF down fails, AER errors degrade, no qat/state is no finding', async () => {
    assert.deepEqual(await health(), [
      [['h_0000:3d:00.0'], undefined],
      [['h_0000:6b:00.0'], { state: 'failed', reason: 'QAT device state down' }],
      [
        ['h_0000:e8:00.1', 'h_0000:e8:00.2'],
        { state: 'degraded', reason: '2 non-fatal PCIe AER errors' },
      ],
    ])
  })

  void it('AER thresholds are options; 0 turns a check off', async () => {
    const h = await health({ aer_nonfatal_degraded: '0' })
    assert.equal(h[2]![1], undefined)
    const higher = await health({ aer_nonfatal_degraded: '3' })
    assert.equal(higher[2]![1], undefined)
  })

  void it('a bad health option is a ConfigError at creation, naming driver and option', () => {
    const host = createFixtureHostProbe(path.join(fixtures, 'empty'))
    assert.throws(
      () => createIntelQatDriver({ host, hostname: 'h' }, { aer_correctable_degraded: 'many' }),
      { name: 'ConfigError', message: /^intel-qat driver option aer_correctable_degraded: / },
    )
  })
})
