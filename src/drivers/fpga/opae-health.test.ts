import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import {
  judgeOpaeErrors,
  listFpgaNodes,
  opaeErrorsLevel,
  opaeHealth,
  parseErrorRegister,
  readOpaeErrors,
  type OpaeErrorReading,
} from './opae-health.js'
import { createFixtureHostProbe } from '../host-probe/fixture-host-probe.js'
import { createMemoryHostProbe } from '../driver-contract.case.js'

const fixture = path.join(import.meta.dirname, '..', '__fixtures__', 'intel-fpga', 'opae-errors')
const pf = (a: string) => `/sys/bus/pci/devices/${a}`

void describe('opae-health: parsers and judging', () => {
  void it('reads hex registers as printed (0x%llx), up to 128 bits', () => {
    assert.equal(parseErrorRegister('0x0\n'), 0n)
    assert.equal(parseErrorRegister('0x8000000000000400'), 0x8000000000000400n)
    assert.equal(parseErrorRegister('0x' + '0'.repeat(31) + '1'), 1n)
    assert.equal(parseErrorRegister('0\n'), 0n)
    for (const bad of ['', '0x', 'zz', '0x12g', '-1', 'errors: 0x2'])
      assert.equal(parseErrorRegister(bad), undefined, bad)
  })

  void it('a non-zero register gives the chosen level, naming the register and the first error', () => {
    const port: OpaeErrorReading = {
      kind: 'port',
      registers: [{ name: 'errors', value: 2n }],
      firstError: 2n,
    }
    const fme: OpaeErrorReading = {
      kind: 'fme',
      registers: [
        { name: 'catfatal_errors', value: 0x800n },
        { name: 'fme_errors', value: 0n },
        { name: 'pcie0_errors', value: 4n },
      ],
      firstError: 0x800n,
      nextError: 4n,
    }
    assert.deepEqual(judgeOpaeErrors([port], 'failed'), {
      state: 'failed',
      reason: 'FPGA port errors 0x2 (first error 0x2)',
    })
    assert.deepEqual(judgeOpaeErrors([fme, port], 'degraded'), {
      state: 'degraded',
      reason:
        'FPGA FME catfatal_errors 0x800, pcie0_errors 0x4 (first error 0x800, next error 0x4); FPGA port errors 0x2 (first error 0x2)',
    })
    assert.equal(judgeOpaeErrors([fme, port], 'off'), undefined)
  })

  void it('keeps a reason with many full registers short', () => {
    const registers = ['catfatal_errors', 'nonfatal_errors', 'fme_errors', 'pcie0_errors'].map(
      (name) => ({ name, value: 0xffffffffffffffffn }),
    )
    const h = judgeOpaeErrors([{ kind: 'fme', registers, firstError: 1n, nextError: 2n }], 'failed')
    assert.equal(h?.state, 'failed')
    assert.equal(h.reason!.length, 150)
    assert.match(h.reason!, /^FPGA FME catfatal_errors 0xffffffffffffffff, .*…$/)
  })

  void it('clean registers are healthy; an unreadable one is unknown', () => {
    const clean: OpaeErrorReading = { kind: 'port', registers: [{ name: 'errors', value: 0n }] }
    assert.equal(judgeOpaeErrors([clean], 'failed'), undefined)
    assert.equal(judgeOpaeErrors([], 'failed'), undefined)
    const broken: OpaeErrorReading = {
      kind: 'fme',
      registers: [
        { name: 'pcie0_errors', value: null },
        { name: 'pcie1_errors', value: 0n },
      ],
    }
    assert.deepEqual(judgeOpaeErrors([broken], 'degraded'), {
      state: 'unknown',
      reason: 'FPGA FME pcie0_errors unreadable',
    })
  })

  void it('opae_errors: failed by default; degraded, off; anything else is a ConfigError', () => {
    assert.equal(opaeErrorsLevel('intel-fpga', {}), 'failed')
    assert.equal(opaeErrorsLevel('intel-fpga', { opae_errors: 'degraded' }), 'degraded')
    assert.equal(opaeErrorsLevel('intel-fpga', { opae_errors: ' off ' }), 'off')
    assert.throws(() => opaeErrorsLevel('intel-fpga', { opae_errors: 'fatal' }), {
      name: 'ConfigError',
      code: 'INVALID_DRIVER_OPTION',
      message: /^intel-fpga driver option opae_errors: must be one of failed, degraded, off/,
    })
  })
})

void describe('opae-health: reading sysfs', () => {
  const host = createFixtureHostProbe(fixture)

  void it('finds the FME and port of both layouts', async () => {
    assert.deepEqual(await listFpgaNodes(host, pf('0000:5e:00.0')), [
      {
        kind: 'fme',
        layout: 'dfl',
        path: `${pf('0000:5e:00.0')}/fpga_region/region0/dfl-fme.0`,
      },
      {
        kind: 'port',
        layout: 'dfl',
        path: `${pf('0000:5e:00.0')}/fpga_region/region0/dfl-port.0`,
      },
    ])
    const opae = `${pf('0000:3b:00.0')}/fpga/intel-fpga-dev.0`
    assert.deepEqual(await listFpgaNodes(host, pf('0000:3b:00.0')), [
      { kind: 'fme', layout: 'opae', path: `${opae}/intel-fpga-fme.0` },
      { kind: 'port', layout: 'opae', path: `${opae}/intel-fpga-port.0` },
    ])
  })

  void it('reads the DFL registers and skips revision, inject_errors, first_malformed_req', async () => {
    const [fme] = await listFpgaNodes(host, pf('0000:af:00.0'))
    assert.deepEqual(await readOpaeErrors(host, fme!), {
      kind: 'fme',
      registers: [
        { name: 'catfatal_errors', value: 0x400n },
        { name: 'nonfatal_errors', value: 0n },
        { name: 'fme_errors', value: 0n },
        { name: 'pcie0_errors', value: 0n },
        { name: 'pcie1_errors', value: 0n },
      ],
      firstError: 0x400n,
    })
  })

  void it('reads the OPAE intel-fpga registers (gbs, bbs, fme-errors/errors)', async () => {
    const [fme] = await listFpgaNodes(host, pf('0000:3b:00.0'))
    assert.deepEqual(
      (await readOpaeErrors(host, fme!))?.registers.map((r) => r.name),
      ['bbs_errors', 'gbs_errors', 'fme-errors/errors', 'pcie0_errors', 'pcie1_errors'],
    )
  })

  void it('judges each card of the fixture', async () => {
    assert.deepEqual(await opaeHealth(host, pf('0000:5e:00.0'), 'failed'), {
      state: 'failed',
      reason: 'FPGA port errors 0x2 (first error 0x2)',
    })
    assert.deepEqual(await opaeHealth(host, pf('0000:af:00.0'), 'degraded'), {
      state: 'degraded',
      reason: 'FPGA FME catfatal_errors 0x400 (first error 0x400)',
    })
    assert.equal(await opaeHealth(host, pf('0000:3b:00.0'), 'failed'), undefined)
    assert.equal(await opaeHealth(host, pf('0000:d8:00.0'), 'failed'), undefined)
    assert.equal(await opaeHealth(host, pf('0000:5e:00.0'), 'off'), undefined)
  })

  void it('a card without error reporting is no finding; an unreadable register is unknown', async () => {
    const base = '/sys/bus/pci/devices/0000:5e:00.0/fpga_region/region0'
    const mem = createMemoryHostProbe({
      [`${base}/dfl-port.0/afu_id`]: 'd8424dc4a4a3c413f89e433683f9040b',
      // `errors` is a directory here, so it exists but cannot be read as a file
      [`${base}/dfl-port.1/errors/errors/x`]: '',
      [`${base}/dfl-fme.0/errors/fme_errors`]: 'garbage',
    })
    assert.deepEqual(await opaeHealth(mem, pf('0000:5e:00.0'), 'failed'), {
      state: 'unknown',
      reason: 'FPGA FME fme_errors unreadable; FPGA port errors unreadable',
    })
    const bare = createMemoryHostProbe({ [`${base}/dfl-port.0/afu_id`]: '' })
    assert.equal(await opaeHealth(bare, pf('0000:5e:00.0'), 'failed'), undefined)
  })
})
