import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import fc from 'fast-check'
import {
  createIntelFpgaDriver,
  fpgaconfArgs,
  intelFpgaDevice,
  intelFpgaTraits,
  parseFpgaId,
} from './intel-fpga.js'
import {
  createFixtureHostProbe,
  garbledFixtureHostProbe as garbled,
} from '../host-probe/fixture-host-probe.js'

const fixtures = path.join(import.meta.dirname, '..', '__fixtures__', 'intel-fpga')
const expected = (c: string): unknown =>
  JSON.parse(readFileSync(path.join(fixtures, c, 'expected.json'), 'utf8'))
const discover = (c: string) =>
  createIntelFpgaDriver({
    host: createFixtureHostProbe(path.join(fixtures, c)),
    hostname: 'compute-1',
  }).discover()

const junk = fc.oneof(
  fc.uint8Array({ maxLength: 48 }).map((b) => Buffer.from(b).toString('latin1')),
  fc.string({ maxLength: 48 }),
  fc.constantFrom(
    '0x8086\n',
    '0x09c4\n',
    '0x0b30',
    'PCI_SLOT_NAME=0000:1b:00.1\n',
    'PCI_SLOT_NAME=0000:1b:00.0',
    'd8424dc4a4a3c413f89e433683f9040b',
    '',
  ),
)

void describe('intel-fpga parsers', () => {
  void it('reads 128-bit ids with or without dashes, rejects anything else', () => {
    assert.equal(
      parseFpgaId('d8424dc4a4a3c413f89e433683f9040b\n'),
      'D8424DC4A4A3C413F89E433683F9040B',
    )
    assert.equal(
      parseFpgaId('F7DF405C-BD7A-CF72-22F1-44B0B93ACD18'),
      'F7DF405CBD7ACF7222F144B0B93ACD18',
    )
    assert.equal(parseFpgaId('d8424dc4a4a3c413f89e433683f9040'), undefined)
    assert.equal(parseFpgaId('zz424dc4a4a3c413f89e433683f9040b'), undefined)
    assert.equal(parseFpgaId(''), undefined)
  })

  void it('names traits vendor, model, function ids, region ids', () => {
    assert.deepEqual(
      intelFpgaTraits({
        productId: '09c4',
        afuIds: ['AA'.repeat(16)],
        regionIds: ['BB'.repeat(16)],
      }),
      [
        'CUSTOM_FPGA_INTEL',
        'CUSTOM_FPGA_INTEL_PAC_ARRIA10',
        `CUSTOM_FPGA_FUNCTION_ID_INTEL_${'AA'.repeat(16)}`,
        `CUSTOM_FPGA_REGION_INTEL_${'BB'.repeat(16)}`,
      ],
    )
  })

  void it('PF without VFs: 1 deployable, 1 accelerator, the PF as handle', () => {
    const dev = intelFpgaDevice(
      { address: '0000:5e:00.0', productId: '09c4', afuIds: [], regionIds: [], vfs: [] },
      'h',
    )
    assert.equal(dev.type, 'FPGA')
    assert.equal(dev.deployables.length, 1)
    assert.equal(dev.deployables[0]!.name, 'h_0000:5e:00.0')
    assert.equal(dev.deployables[0]!.numAccelerators, 1)
    assert.deepEqual(dev.deployables[0]!.attachHandles, [
      { type: 'PCI', info: { domain: '0000', bus: '5e', device: '00', function: '0' } },
    ])
  })

  void it('PF with VFs: 1 deployable, accelerators and handles are the VFs', () => {
    const dev = intelFpgaDevice(
      {
        address: '0000:1b:00.0',
        productId: '0b30',
        afuIds: [],
        regionIds: [],
        vfs: ['0000:1b:00.1', '0000:1b:00.2'],
      },
      'h',
    )
    assert.equal(dev.deployables.length, 1)
    assert.equal(dev.deployables[0]!.numAccelerators, 2)
    assert.deepEqual(
      dev.deployables[0]!.attachHandles.map((x) => x.info.function),
      ['1', '2'],
    )
    assert.deepEqual(dev.controlPath.info, {
      domain: '0000',
      bus: '1b',
      device: '00',
      function: '0',
    })
  })
})

void describe('intel-fpga discover', () => {
  for (const c of ['typical', 'pf-vfs', 'malformed', 'empty', 'opae-errors']) {
    void it(`${c}: matches expected.json`, async () => {
      assert.deepEqual(await discover(c), expected(c))
    })
  }

  void it('reads both the DFL and the OPAE layouts', async () => {
    const traits = (await discover('typical')).flatMap((d) =>
      d.deployables[0]!.attributes.map((a) => a.value),
    )
    assert.ok(traits.includes('CUSTOM_FPGA_FUNCTION_ID_INTEL_D8424DC4A4A3C413F89E433683F9040B')) // DFL afu_id
    assert.ok(traits.includes('CUSTOM_FPGA_REGION_INTEL_9926AB6D6C925A68AABCA7D84C545738')) // DFL compat_id
    assert.ok(traits.includes('CUSTOM_FPGA_FUNCTION_ID_INTEL_F7DF405CBD7ACF7222F144B0B93ACD18')) // OPAE afu_id
    assert.ok(traits.includes('CUSTOM_FPGA_REGION_INTEL_BFAC4D851ED54D385C6A4D8C3B0E3C4F')) // OPAE interface_id
  })

  void it('never reports a VF as a card of its own', async () => {
    const devices = await discover('pf-vfs')
    assert.equal(devices.length, 1)
    assert.equal(devices[0]!.deployables[0]!.numAccelerators, 2)
  })

  void it('never throws on random file contents', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('typical', 'pf-vfs', 'malformed', 'opae-errors'),
        fc.array(junk, { minLength: 1, maxLength: 8 }),
        async (c, contents) => {
          const devices = await createIntelFpgaDriver({
            host: garbled(path.join(fixtures, c), contents),
            hostname: 'h',
          }).discover()
          assert.ok(Array.isArray(devices))
        },
      ),
      { numRuns: 60 },
    )
  })

  void it('programs with fpgaconf, the PCI numbers in 0x form, with a long time limit', async () => {
    const line =
      '/usr/bin/fpgaconf --bus 0x5e --device 0x00 --function 0x0 /var/lib/cyborg/images/crc.gbs'
    const host = createFixtureHostProbe(path.join(fixtures, 'typical'), { outputs: { [line]: '' } })
    const driver = createIntelFpgaDriver({ host, hostname: 'compute-1' })
    await driver.program!('0000:5e:00.0', '/var/lib/cyborg/images/crc.gbs')
    assert.deepEqual(host.execs, [
      {
        command: '/usr/bin/fpgaconf',
        args: line.split(' ').slice(1),
        options: { timeoutMs: 30 * 60_000 },
      },
    ])
    assert.deepEqual(
      fpgaconfArgs({ domain: '0000', bus: '10', device: '1f', function: '7' }, '/i.gbs'),
      ['--bus', '0x10', '--device', '0x1f', '--function', '0x7', '/i.gbs'],
    )
    await assert.rejects(driver.program!('0000:3b:00.0', '/missing.gbs'), {
      name: 'DriverError',
      code: 'PROGRAM_FAILED',
      message: /0000:3b:00\.0 with \/missing\.gbs/,
    })
    await assert.rejects(driver.program!('not-an-address', '/i.gbs'), {
      name: 'InvalidInputError',
      code: 'PCI_ADDRESS_INVALID',
    })
  })
})

void describe('intel-fpga health', () => {
  const health = async (options: Record<string, string> = {}) =>
    (
      await createIntelFpgaDriver(
        { host: createFixtureHostProbe(path.join(fixtures, 'opae-errors')), hostname: 'h' },
        options,
      ).discover()
    ).map((d) => [d.deployables[0]!.name, d.health])

  void it('opae-errors: error registers and PCIe findings per card', async () => {
    assert.deepEqual(await health(), [
      ['h_0000:3b:00.0', { state: 'degraded', reason: '1500 correctable PCIe AER errors' }],
      ['h_0000:5e:00.0', { state: 'failed', reason: 'FPGA port errors 0x2 (first error 0x2)' }],
      [
        'h_0000:af:00.0',
        { state: 'failed', reason: 'FPGA FME catfatal_errors 0x400 (first error 0x400)' },
      ],
      ['h_0000:d8:00.0', undefined],
    ])
  })

  void it('opae_errors = degraded keeps the cards offered; off and 0 turn checks off', async () => {
    const degraded = await health({ opae_errors: 'degraded' })
    assert.deepEqual(degraded[1]![1], {
      state: 'degraded',
      reason: 'FPGA port errors 0x2 (first error 0x2)',
    })
    const off = await health({ opae_errors: 'off', aer_correctable_degraded: '0' })
    assert.deepEqual(
      off.map(([, h]) => h),
      [undefined, undefined, undefined, undefined],
    )
  })

  void it('a bad health option is a ConfigError at creation, naming driver and option', () => {
    const host = createFixtureHostProbe(path.join(fixtures, 'empty'))
    for (const [option, value] of [
      ['opae_errors', 'yes'],
      ['aer_nonfatal_degraded', '1.5'],
    ] as const) {
      assert.throws(() => createIntelFpgaDriver({ host, hostname: 'h' }, { [option]: value }), {
        name: 'ConfigError',
        message: new RegExp(`^intel-fpga driver option ${option}: `),
      })
    }
  })
})
