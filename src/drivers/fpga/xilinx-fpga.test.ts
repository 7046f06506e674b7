import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import fc from 'fast-check'
import {
  createXilinxFpgaDriver,
  groupXilinxCards,
  parseLspciNnk,
  XBMGMT,
  xilinxDevice,
} from './xilinx-fpga.js'
import { createFixtureHostProbe } from '../host-probe/fixture-host-probe.js'
import { createMemoryHostProbe } from '../driver-contract.case.js'
import type { HostProbe } from '../driver.js'
import { DriverError } from '../../domain/errors.js'

const fixtures = path.join(import.meta.dirname, '..', '__fixtures__', 'xilinx-fpga')
const expected = (c: string): unknown =>
  JSON.parse(readFileSync(path.join(fixtures, c, 'expected.json'), 'utf8'))
const discover = (c: string) =>
  createXilinxFpgaDriver({
    host: createFixtureHostProbe(path.join(fixtures, c)),
    hostname: 'compute-1',
  }).discover()
const probe = (exec: HostProbe['exec']): HostProbe => ({
  readFile: () => Promise.reject(new Error('no files')),
  readDir: () => Promise.reject(new Error('no dirs')),
  exists: () => Promise.resolve(false),
  writeFile: () => Promise.reject(new Error('read-only')),
  exec,
})

const U200 = `0000:3b:00.0 Processing accelerators [1200]: Xilinx Corporation Device [10ee:5000]
\tSubsystem: Xilinx Corporation Device [10ee:000e]
\tKernel driver in use: xclmgmt
0000:3b:00.1 Processing accelerators [1200]: Xilinx Corporation Device [10ee:5001] (rev 01)
\tKernel driver in use: xocl
\tKernel modules: xocl
`

void describe('xilinx-fpga parsers', () => {
  void it('parses device lines and their kernel driver', () => {
    assert.deepEqual(parseLspciNnk(U200), [
      {
        address: '0000:3b:00.0',
        classCode: '1200',
        className: 'Processing accelerators',
        vendorId: '10ee',
        productId: '5000',
        driver: 'xclmgmt',
      },
      {
        address: '0000:3b:00.1',
        classCode: '1200',
        className: 'Processing accelerators',
        vendorId: '10ee',
        productId: '5001',
        driver: 'xocl',
      },
    ])
  })

  void it('skips garbage and does not attach a driver line to a skipped device', () => {
    const text =
      'garbage [10ee:5000]\n\tKernel driver in use: xocl\n0000:3b:00.0 Processing accelerators [1200]: X [10ee:5000]\n'
    assert.deepEqual(
      parseLspciNnk(text).map((f) => f.driver),
      [undefined],
    )
    assert.deepEqual(parseLspciNnk(''), [])
  })

  void it('merges the two PFs of a slot; mgmt is the xclmgmt one, else the lowest function', () => {
    const swapped = parseLspciNnk(
      U200.replace('xclmgmt', 'tmp').replace('xocl', 'xclmgmt').replace('tmp', 'xocl'),
    )
    const [card] = groupXilinxCards(swapped)
    assert.equal(card!.mgmt.address, '0000:3b:00.1')
    assert.equal(card!.user!.address, '0000:3b:00.0')
    const unbound = parseLspciNnk(U200.replace(/\tKernel driver in use: \S+\n/g, ''))
    assert.equal(groupXilinxCards(unbound)[0]!.mgmt.address, '0000:3b:00.0')
  })

  void it('one deployable, one accelerator, two PCI handles (Nova sees one unit)', () => {
    const dev = xilinxDevice(groupXilinxCards(parseLspciNnk(U200))[0]!, 'h')
    assert.equal(dev.type, 'FPGA')
    assert.equal(dev.deployables.length, 1)
    const dep = dev.deployables[0]!
    assert.equal(dep.name, 'h_0000:3b:00.0')
    assert.equal(dep.numAccelerators, 1)
    assert.equal(dep.attachHandles.length, 2)
    assert.deepEqual(dep.attributes, [
      { key: 'rc', value: 'FPGA' },
      { key: 'trait0', value: 'CUSTOM_FPGA_XILINX' },
      { key: 'trait1', value: 'CUSTOM_FPGA_PRODUCT_ID_5000' },
    ])
  })
})

void describe('xilinx-fpga discover', () => {
  for (const c of ['typical', 'two-cards', 'malformed', 'empty']) {
    void it(`${c}: matches expected.json`, async () => {
      assert.deepEqual(await discover(c), expected(c))
    })
  }

  void it('a host without lspci is an empty host; a failing lspci is an error, not an empty inventory', async () => {
    const missing = new DriverError('command not found: lspci', { code: 'COMMAND_NOT_FOUND' })
    assert.deepEqual(
      await createXilinxFpgaDriver({
        host: probe(() => Promise.reject(missing)),
        hostname: 'h',
      }).discover(),
      [],
    )
    const failed = new DriverError('lspci: exit code 1', { code: 'COMMAND_FAILED' })
    await assert.rejects(
      createXilinxFpgaDriver({
        host: probe(() => Promise.reject(failed)),
        hostname: 'h',
      }).discover(),
      {
        code: 'LSPCI_FAILED',
      },
    )
  })

  void it('runs the configured lspci binary', async () => {
    const calls: string[] = []
    const host = probe((cmd, args) => {
      calls.push([cmd, ...args].join(' '))
      return Promise.resolve(U200)
    })
    assert.equal(
      (
        await createXilinxFpgaDriver(
          { host, hostname: 'h' },
          { lspci: '/usr/bin/lspci' },
        ).discover()
      ).length,
      1,
    )
    assert.deepEqual(calls, ['/usr/bin/lspci -nnkD'])
  })

  void it('never throws on random lspci output', async () => {
    const line = fc.constantFrom(
      ...U200.split('\n'),
      '0000:3c:00.1 Processing accelerators [1200]: Xilinx [10ee:5021]',
      '\tKernel driver in use: xclmgmt',
    )
    const junk = fc.oneof(
      fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('latin1')),
      fc.string(),
      line,
    )
    await fc.assert(
      fc.asyncProperty(fc.array(junk, { maxLength: 20 }), async (lines) => {
        const host = probe(() => Promise.resolve(lines.join('\n')))
        const devices = await createXilinxFpgaDriver({ host, hostname: 'h' }).discover()
        assert.ok(Array.isArray(devices))
      }),
      { numRuns: 100 },
    )
  })

  void it('programs with xbmgmt program --base, the management PF as a BDF', async () => {
    const line = `${XBMGMT} program --device 0000:3b:00.0 --base --image /opt/xilinx/firmware/u200/base.xsabin`
    const host = createFixtureHostProbe(path.join(fixtures, 'typical'), {
      outputs: { [line]: 'done\n' },
    })
    const driver = createXilinxFpgaDriver({ host, hostname: 'compute-1' })
    await driver.program!('0000:3B:00.0', '/opt/xilinx/firmware/u200/base.xsabin')
    assert.equal(host.execs.length, 1)
    assert.equal([host.execs[0]!.command, ...host.execs[0]!.args].join(' '), line)
    await assert.rejects(driver.program!('0000:3b:00.0', '/other.xsabin'), {
      name: 'DriverError',
      code: 'PROGRAM_FAILED',
    })
  })
})

void describe('xilinx-fpga health', () => {
  const files = (aer: string): Record<string, string> => ({
    '/sys/bus/pci/devices/0000:3b:00.0/aer_dev_fatal': aer,
    '/sys/bus/pci/devices/0000:3b:00.0/current_link_width': '16\n',
    '/sys/bus/pci/devices/0000:3b:00.0/max_link_width': '16\n',
    '/sys/bus/pci/devices/0000:3b:00.0/current_link_speed': '8.0 GT/s PCIe\n',
    '/sys/bus/pci/devices/0000:3b:00.0/max_link_speed': '8.0 GT/s PCIe\n',
  })
  const discover = async (aer: string, options: Record<string, string> = {}) =>
    (
      await createXilinxFpgaDriver(
        { host: createMemoryHostProbe(files(aer), { 'lspci -nnkD': U200 }), hostname: 'h' },
        options,
      ).discover()
    ).map((d) => d.health)

  void it('reads the PCIe health of the management PF', async () => {
    assert.deepEqual(await discover('TOTAL_ERR_FATAL 0\n'), [undefined])
    assert.deepEqual(await discover('MalfTLP 1\nTOTAL_ERR_FATAL 1\n'), [
      { state: 'failed', reason: '1 fatal PCIe AER error' },
    ])
    assert.deepEqual(await discover('TOTAL_ERR_FATAL 1\n', { aer_fatal_failed: '2' }), [undefined])
  })

  void it('refuses a bad health option at creation', () => {
    const host = probe(() => Promise.resolve(U200))
    assert.throws(() => createXilinxFpgaDriver({ host, hostname: 'h' }, { link_check: 'yes' }), {
      name: 'ConfigError',
      message: /^xilinx-fpga driver option link_check: /,
    })
  })
})
