import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createFixtureHostProbe, type FixtureHostProbe } from '../host-probe/fixture-host-probe.js'
import { createNvidiaGpuDriver } from './nvidia-gpu.js'
import { parseNvidiaSmiProcesses } from './nvidia-clean.js'
import { runClean } from '../clean.js'
import {
  commandFailed,
  commandMissing,
  mdevTarget,
  overriddenProbe,
  pciTarget,
} from '../clean-test-support.js'

const FIXTURE = new URL('../__fixtures__/nvidia-gpu/clean', import.meta.url).pathname
const SMI = readFileSync(`${FIXTURE}/nvidia-smi-q-x.xml`, 'utf8')
const UUID = '6f8c7c4e-0b1a-4f5e-9a55-0d6a3c1c2b11'
const RESET_D8 = 'nvidia-smi --gpu-reset -i 00000000:D8:00.0'
const DONE = 'GPU 00000000:D8:00.0 was successfully reset.\nAll done.\n'
const lines = (host: FixtureHostProbe) => host.execs.map((e) => [e.command, ...e.args].join(' '))
const driverOn = (host: Parameters<typeof createNvidiaGpuDriver>[0]['host'], o = {}) =>
  createNvidiaGpuDriver({ host, hostname: 'h' }, o)

void describe('nvidia-gpu: parseNvidiaSmiProcesses', () => {
  void it('lists each GPU with nvidia-smi’s id and the processes on it', () => {
    assert.deepEqual(parseNvidiaSmiProcesses(SMI), [
      { id: '00000000:3B:00.0', address: '0000:3b:00.0', processes: ['41377 python3'] },
      { id: '00000000:D8:00.0', address: '0000:d8:00.0', processes: [] },
    ])
    assert.deepEqual(parseNvidiaSmiProcesses('<gpu id="junk"></gpu>garbage'), [])
  })
})

void describe('nvidia-gpu: clean', () => {
  void it('resets an idle GPU with nvidia-smi --gpu-reset -i <its id>, then checks it is idle', async () => {
    const host = createFixtureHostProbe(FIXTURE, { outputs: { [RESET_D8]: DONE } })
    const report = await runClean(driverOn(host), pciTarget('0000:d8:00.0'))
    assert.deepEqual(lines(host), ['nvidia-smi -q -x', RESET_D8, 'nvidia-smi -q -x'])
    assert.equal(host.execs[1]!.options?.timeoutMs, 300_000)
    assert.deepEqual(host.writes, [])
    assert.equal(report.method, 'nvidia-smi-gpu-reset')
    assert.equal(report.evidence, `GPU 0000:d8:00.0 idle\n$ ${RESET_D8}\n${DONE.trimEnd()}`)
    assert.equal(report.verifyEvidence, 'nvidia-smi lists 00000000:D8:00.0, no processes')
  })

  void it('does not reset a GPU with processes on the host (CLEAN_BUSY)', async () => {
    const host = createFixtureHostProbe(FIXTURE)
    await assert.rejects(runClean(driverOn(host), pciTarget('0000:3b:00.0')), {
      code: 'CLEAN_BUSY',
      message: /in use on the host \(41377 python3\)/,
    })
    assert.deepEqual(lines(host), ['nvidia-smi -q -x'])
  })

  void it('refuses when nvidia-smi says the reset is not available (exit 3)', async () => {
    const base = createFixtureHostProbe(FIXTURE)
    const host = overriddenProbe(base, {}, {}, { [RESET_D8]: commandFailed('nvidia-smi', 3) })
    await assert.rejects(runClean(driverOn(host), pciTarget('0000:d8:00.0')), {
      code: 'CLEAN_UNSUPPORTED',
    })
    const other = overriddenProbe(base, {}, {}, { [RESET_D8]: commandFailed('nvidia-smi', 255) })
    await assert.rejects(runClean(driverOn(other), pciTarget('0000:d8:00.0')), {
      code: 'CLEAN_FAILED',
    })
  })

  void it('falls back to the FLR when nvidia-smi is not installed, or the GPU is on vfio-pci', async () => {
    const base = createFixtureHostProbe(FIXTURE)
    const noSmi = overriddenProbe(base, {}, {}, { 'nvidia-smi': commandMissing('nvidia-smi') })
    const report = await runClean(driverOn(noSmi), pciTarget('0000:d8:00.0'))
    assert.equal(report.method, 'pci-flr')
    assert.match(report.evidence, /^nvidia-smi not available\n/)
    assert.deepEqual(base.writes, [{ path: '/sys/bus/pci/devices/0000:d8:00.0/reset', data: '1' }])
    const host = createFixtureHostProbe(FIXTURE)
    const vfio = await runClean(driverOn(host), pciTarget('0000:af:00.0'))
    assert.equal(vfio.method, 'pci-flr')
    assert.match(vfio.evidence, /^0000:af:00.0 not held by the NVIDIA driver\n/)
    assert.equal(vfio.verifyEvidence, '0000:af:00.0 present, ids 10de:1eb8, vfio-pci bound')
    assert.deepEqual(host.writes, [{ path: '/sys/bus/pci/devices/0000:af:00.0/reset', data: '1' }])
    assert.deepEqual(lines(host), ['nvidia-smi -q -x'])
  })

  void it('with nvidia_smi = false never runs it', async () => {
    const host = createFixtureHostProbe(FIXTURE)
    const report = await runClean(
      driverOn(host, { nvidia_smi: 'false' }),
      pciTarget('0000:d8:00.0'),
    )
    assert.equal(report.method, 'pci-flr')
    assert.deepEqual(host.execs, [])
  })

  void it('verify fails when the GPU is busy or gone after the reset', async () => {
    const base = createFixtureHostProbe(FIXTURE, { outputs: { [RESET_D8]: DONE } })
    const cleaned = await driverOn(base).clean!(pciTarget('0000:d8:00.0'), {})
    const busy = SMI.replace(
      /<processes>\s*<\/processes>/,
      '<processes><process_info><pid>7</pid><process_name>x</process_name></process_info></processes>',
    )
    const gone = SMI.replace(/<gpu id="00000000:D8:00.0">[\s\S]*<\/gpu>/, '')
    for (const [text, message] of [
      [busy, /processes on it: 7 x/],
      [gone, /nvidia-smi does not list the GPU/],
    ] as const) {
      const after = overriddenProbe(base, {}, { 'nvidia-smi -q -x': [text] })
      await assert.rejects(driverOn(after).verify!(pciTarget('0000:d8:00.0'), cleaned, {}), {
        code: 'VERIFY_FAILED',
        message,
      })
    }
  })

  void it('recreates a vGPU’s mdev: remove, then create with the same uuid', async () => {
    const host = createFixtureHostProbe(FIXTURE)
    const report = await runClean(driverOn(host), mdevTarget('0000:d8:00.0', 'nvidia-471', UUID))
    const type = '/sys/bus/pci/devices/0000:d8:00.0/mdev_supported_types/nvidia-471'
    assert.deepEqual(host.writes, [
      { path: `/sys/bus/mdev/devices/${UUID}/remove`, data: '1' },
      { path: `${type}/create`, data: UUID },
    ])
    assert.deepEqual(host.execs, [])
    assert.equal(report.method, 'mdev-recreate')
    assert.equal(report.verifyEvidence, `mdev ${UUID} present as before`)
  })

  void it('an mdev already removed is created and removed again, leaving the host as found', async () => {
    const other = '0a7b1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d'
    const host = createFixtureHostProbe(FIXTURE)
    const report = await runClean(driverOn(host), mdevTarget('0000:d8:00.0', 'nvidia-471', other))
    assert.deepEqual(
      host.writes.map((w) => w.path.split('/').at(-1)),
      ['create', 'remove'],
    )
    assert.equal(report.verifyEvidence, `mdev ${other} absent as before`)
  })

  void it('refuses an mdev type the GPU does not offer, and a target without a uuid', async () => {
    const host = createFixtureHostProbe(FIXTURE)
    await assert.rejects(runClean(driverOn(host), mdevTarget('0000:d8:00.0', 'nvidia-999', UUID)), {
      code: 'CLEAN_UNSUPPORTED',
    })
    await assert.rejects(runClean(driverOn(host), mdevTarget('0000:d8:00.0', 'nvidia-471')), {
      code: 'CLEAN_TARGET_INVALID',
    })
    assert.deepEqual(host.writes, [])
  })

  void it('verify fails when the recreated mdev is missing', async () => {
    const base = createFixtureHostProbe(FIXTURE)
    const target = mdevTarget('0000:d8:00.0', 'nvidia-471', UUID)
    const cleaned = await driverOn(base).clean!(target, {})
    const after = overriddenProbe(base, { [`/sys/bus/mdev/devices/${UUID}`]: undefined })
    await assert.rejects(driverOn(after).verify!(target, cleaned, {}), {
      code: 'VERIFY_FAILED',
      message: /is missing/,
    })
  })

  void it('clean = none runs nothing; a hung reset times out', async () => {
    const host = createFixtureHostProbe(FIXTURE)
    const report = await runClean(driverOn(host, { clean: 'none' }), pciTarget('0000:d8:00.0'))
    assert.equal(report.method, 'none')
    assert.deepEqual(host.execs, [])
    const hung = { ...host, exec: () => new Promise<string>(() => {}) }
    await assert.rejects(runClean(driverOn(hung), pciTarget('0000:d8:00.0'), { timeoutMs: 20 }), {
      code: 'CLEAN_TIMEOUT',
    })
  })
})
