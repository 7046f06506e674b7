import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createFixtureHostProbe } from '../host-probe/fixture-host-probe.js'
import { createIntelFpgaDriver, FPGACONF } from './intel-fpga.js'
import { createXilinxFpgaDriver, XBMGMT } from './xilinx-fpga.js'
import { runClean } from '../clean.js'
import { commandMissing, overriddenProbe, pciTarget } from '../clean-test-support.js'

const fixture = (d: string): string => new URL(`../__fixtures__/${d}`, import.meta.url).pathname
const BLANK = '/opt/blank/blank.gbs'
const INTEL_LINE = `${FPGACONF} --bus 0x3b --device 0x00 --function 0x0 ${BLANK}`
const AFU = 'f7df405c-bd7a-cf72-22f1-44b0b93acd18'
const lines = (execs: readonly { command: string; args: string[] }[]) =>
  execs.map((e) => [e.command, ...e.args].join(' '))

void describe('intel-fpga: clean with the blank image', () => {
  const intel = (host: Parameters<typeof createIntelFpgaDriver>[0]['host'], o = {}) =>
    createIntelFpgaDriver({ host, hostname: 'h' }, { blank_image: BLANK, ...o })

  void it('loads blank_image with fpgaconf on the card, as program() does, and reads the AFU id back', async () => {
    const host = createFixtureHostProbe(fixture('intel-fpga/typical'), {
      outputs: { [INTEL_LINE]: 'Programmed.\n' },
    })
    const report = await runClean(intel(host, { blank_afu_id: AFU }), pciTarget('0000:3b:00.0'))
    assert.deepEqual(lines(host.execs), [INTEL_LINE])
    assert.deepEqual(host.writes, [])
    assert.equal(report.method, 'fpga-blank-image')
    assert.equal(report.evidence, `$ ${INTEL_LINE}\nProgrammed.`)
    assert.equal(
      report.verifyEvidence,
      '0000:3b:00.0 present, AFU id F7DF405CBD7ACF7222F144B0B93ACD18',
    )
    assert.equal(intel(host).cleanSettings?.timeoutMs, 1_800_000)
  })

  void it('without blank_afu_id, verifies that the card is still there', async () => {
    const host = createFixtureHostProbe(fixture('intel-fpga/typical'), {
      outputs: { [INTEL_LINE]: '' },
    })
    const report = await runClean(intel(host), pciTarget('0000:3b:00.0'))
    assert.equal(report.verifyEvidence, '0000:3b:00.0 present')
  })

  void it('verify fails when the AFU id read back is not the blank one', async () => {
    const host = createFixtureHostProbe(fixture('intel-fpga/typical'), {
      outputs: { [INTEL_LINE]: '' },
    })
    await assert.rejects(
      runClean(
        intel(host, { blank_afu_id: '00000000000000000000000000000001' }),
        pciTarget('0000:3b:00.0'),
      ),
      { code: 'VERIFY_FAILED', message: /expected 00000000000000000000000000000001/ },
    )
  })

  void it('refuses without blank_image or without fpgaconf; fails when fpgaconf fails', async () => {
    const host = createFixtureHostProbe(fixture('intel-fpga/typical'))
    const noImage = createIntelFpgaDriver({ host, hostname: 'h' })
    await assert.rejects(runClean(noImage, pciTarget('0000:3b:00.0')), {
      code: 'CLEAN_UNSUPPORTED',
      message: /\[intel_fpga\] blank_image/,
    })
    assert.deepEqual(host.execs, [])
    const noTool = overriddenProbe(host, {}, {}, { [FPGACONF]: commandMissing(FPGACONF) })
    await assert.rejects(runClean(intel(noTool), pciTarget('0000:3b:00.0')), {
      code: 'CLEAN_UNSUPPORTED',
      message: /not installed/,
    })
    const broken = overriddenProbe(host, {}, {}, { [FPGACONF]: new Error('exit code 1') })
    await assert.rejects(runClean(intel(broken), pciTarget('0000:3b:00.0')), {
      code: 'CLEAN_FAILED',
    })
  })

  void it('clean = none loads nothing; a bad blank_afu_id is refused at creation', async () => {
    const host = createFixtureHostProbe(fixture('intel-fpga/typical'))
    assert.equal(
      (await runClean(intel(host, { clean: 'none' }), pciTarget('0000:3b:00.0'))).method,
      'none',
    )
    assert.deepEqual(host.execs, [])
    assert.throws(() => intel(host, { blank_afu_id: 'xyz' }), {
      name: 'ConfigError',
      details: { driver: 'intel-fpga', option: 'blank_afu_id' },
    })
  })

  void it('times out while the tool runs', async () => {
    const host = createFixtureHostProbe(fixture('intel-fpga/typical'))
    const hung = { ...host, exec: () => new Promise<string>(() => {}) }
    await assert.rejects(runClean(intel(hung), pciTarget('0000:3b:00.0'), { timeoutMs: 20 }), {
      code: 'CLEAN_TIMEOUT',
    })
  })
})

void describe('xilinx-fpga: clean with the blank image', () => {
  const line = `${XBMGMT} program --device 0000:3b:00.0 --base --image ${BLANK}`
  const VENDOR = '/sys/bus/pci/devices/0000:3b:00.0/vendor'
  const xilinx = (host: Parameters<typeof createXilinxFpgaDriver>[0]['host'], o = {}) =>
    createXilinxFpgaDriver({ host, hostname: 'h' }, { blank_image: BLANK, ...o })

  void it('flashes blank_image with xbmgmt program --base, then checks the card is there', async () => {
    const base = createFixtureHostProbe(fixture('xilinx-fpga/typical'), {
      outputs: { [line]: 'Programming shell on device [0000:3b:00.0]...\n' },
    })
    const host = overriddenProbe(base, { [VENDOR]: '0x10ee\n' })
    const report = await runClean(xilinx(host), pciTarget('0000:3b:00.1', '0000:3b:00.0'))
    assert.deepEqual(lines(base.execs), [line])
    assert.equal(report.method, 'fpga-blank-image')
    assert.equal(report.verifyEvidence, '0000:3b:00.0 present')
  })

  void it('refuses without blank_image or xbmgmt; verify fails when the card is gone', async () => {
    const base = createFixtureHostProbe(fixture('xilinx-fpga/typical'), { outputs: { [line]: '' } })
    await assert.rejects(
      runClean(createXilinxFpgaDriver({ host: base, hostname: 'h' }), pciTarget('0000:3b:00.0')),
      { code: 'CLEAN_UNSUPPORTED', message: /\[xilinx_fpga\] blank_image/ },
    )
    const noTool = overriddenProbe(base, {}, {}, { [XBMGMT]: commandMissing(XBMGMT) })
    await assert.rejects(runClean(xilinx(noTool), pciTarget('0000:3b:00.0')), {
      code: 'CLEAN_UNSUPPORTED',
    })
    await assert.rejects(runClean(xilinx(base), pciTarget('0000:3b:00.0')), {
      code: 'VERIFY_FAILED',
      message: /the card is gone/,
    })
  })
})
