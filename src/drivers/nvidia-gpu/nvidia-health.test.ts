import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  DEFAULT_NVIDIA_HEALTH,
  judgeNvidiaGpu,
  lostGpuAddresses,
  NVIDIA_PCI_HEALTH,
  nvidiaHealthThresholds,
  nvidiaSmiFindings,
  parseNvidiaSmiHealth,
  parseUeventDriver,
  type GpuBinding,
} from './nvidia-health.js'
import { nvidiaSmiFailure, runNvidiaSmi, type NvidiaSmiRun } from './nvidia-smi.js'
import { createFixtureHostProbe } from '../host-probe/fixture-host-probe.js'
import { createMemoryHostProbe } from '../driver-contract.case.js'
import { ConfigError, DriverError } from '../../domain/errors.js'

const fixture = (c: string): string =>
  new URL(`../__fixtures__/nvidia-gpu/${c}`, import.meta.url).pathname
const fixtureFile = (c: string, f: string): Promise<string> =>
  createFixtureHostProbe('/').readFile(`${fixture(c)}/${f}`)

const A = '0000:3b:00.0'
const B = '0000:d8:00.0'
const doc = (...gpus: string[]): string =>
  `<?xml version="1.0" ?>\n<nvidia_smi_log>\n${gpus.join('\n')}\n</nvidia_smi_log>\n`
const gpu = (id: string, body = ''): string => `<gpu id="${id}">${body}</gpu>`

/** A driver 550+ layout: the SRAM count split into parity and SEC-DED. */
const NEW_ECC = `<ecc_errors>
  <volatile>
    <sram_correctable>0</sram_correctable>
    <sram_uncorrectable_parity>1</sram_uncorrectable_parity>
    <sram_uncorrectable_secded>2</sram_uncorrectable_secded>
    <dram_correctable>5</dram_correctable>
    <dram_uncorrectable>1</dram_uncorrectable>
  </volatile>
  <aggregate>
    <dram_uncorrectable>40</dram_uncorrectable>
  </aggregate>
</ecc_errors>`

/** A driver ≤ 440 layout: single_bit and double_bit per memory, with totals. */
const OLD_ECC = `<ecc_errors>
  <volatile>
    <single_bit>
      <device_memory>12</device_memory>
      <register_file>0</register_file>
      <total>12</total>
    </single_bit>
    <double_bit>
      <device_memory>3</device_memory>
      <register_file>0</register_file>
      <l1_cache>N/A</l1_cache>
      <total>3</total>
    </double_bit>
  </volatile>
  <aggregate>
    <single_bit><total>99</total></single_bit>
    <double_bit><total>77</total></double_bit>
  </aggregate>
</ecc_errors>`

const views = (...b: [string, GpuBinding][]) =>
  b.map(([address, binding]) => ({ address, binding }))
const ran = (text: string): NvidiaSmiRun => ({ kind: 'ran', text })
const T = DEFAULT_NVIDIA_HEALTH

void describe('nvidia-health: parseNvidiaSmiHealth', () => {
  void it('reads the ecc fixture: 2 volatile uncorrectable errors on A, none on B', async () => {
    assert.deepEqual(parseNvidiaSmiHealth(await fixtureFile('ecc', 'nvidia-smi-q-x.xml')), [
      { address: A, eccUncorrectable: 2, remappedRowFailure: false, remappedRowPending: false },
      { address: B, eccUncorrectable: 0, remappedRowFailure: false, remappedRowPending: false },
    ])
  })

  void it('sums DRAM and SRAM (split or not) uncorrectable counts, volatile only', () => {
    const [split] = parseNvidiaSmiHealth(doc(gpu(A, NEW_ECC)))
    assert.equal(split?.eccUncorrectable, 4)
    const whole = NEW_ECC.replace(
      /<sram_uncorrectable_parity>1<\/sram_uncorrectable_parity>/,
      '<sram_uncorrectable>6</sram_uncorrectable>',
    )
    assert.equal(parseNvidiaSmiHealth(doc(gpu(A, whole)))[0]?.eccUncorrectable, 7)
  })

  void it('reads the double_bit total of older drivers', () => {
    assert.equal(parseNvidiaSmiHealth(doc(gpu(A, OLD_ECC)))[0]?.eccUncorrectable, 3)
  })

  void it('has no ECC reading for N/A (ECC off) or without the element', () => {
    const na = NEW_ECC.replace(/>\d+</g, '>N/A<')
    assert.deepEqual(parseNvidiaSmiHealth(doc(gpu(A, na), gpu(B))), [
      { address: A },
      { address: B },
    ])
  })

  void it('reads pending retirements (both spellings) and row remapping (both spellings)', () => {
    const retired = (tag: string, v: string) =>
      `<retired_pages><double_bit_retirement><retired_count>1</retired_count></double_bit_retirement><${tag}>${v}</${tag}></retired_pages>`
    assert.equal(
      parseNvidiaSmiHealth(doc(gpu(A, retired('pending_blacklist', 'Yes'))))[0]
        ?.retiredPagesPending,
      true,
    )
    assert.equal(
      parseNvidiaSmiHealth(doc(gpu(A, retired('pending_retirement', 'Yes'))))[0]
        ?.retiredPagesPending,
      true,
    )
    assert.equal(
      parseNvidiaSmiHealth(doc(gpu(A, retired('pending_retirement', 'No'))))[0]
        ?.retiredPagesPending,
      false,
    )
    const remap = (failure: string, pending: string) =>
      '<remapped_rows><remapped_row_corr>0</remapped_row_corr><remapped_row_unc>1</remapped_row_unc>' +
      `${failure}<remapped_row_pending>${pending}</remapped_row_pending></remapped_rows>`
    assert.deepEqual(
      parseNvidiaSmiHealth(
        doc(gpu(A, remap('<remapped_row_failure>Yes</remapped_row_failure>', 'No'))),
      )[0],
      { address: A, remappedRowFailure: true, remappedRowPending: false },
    )
    assert.deepEqual(
      parseNvidiaSmiHealth(
        doc(
          gpu(
            A,
            remap('<remapped_row_failure_occurred>Yes</remapped_row_failure_occurred>', 'Yes'),
          ),
        ),
      )[0],
      { address: A, remappedRowFailure: true, remappedRowPending: true },
    )
    assert.deepEqual(parseNvidiaSmiHealth(doc(gpu(A, '<remapped_rows>N/A</remapped_rows>')))[0], {
      address: A,
    })
  })

  void it('skips GPUs cut off by a truncated document and garbage ids', () => {
    const text = doc(gpu('nonsense', NEW_ECC), gpu(A, NEW_ECC)) + gpu(B, NEW_ECC).slice(0, 60)
    assert.deepEqual(
      parseNvidiaSmiHealth(text).map((r) => r.address),
      [A],
    )
  })
})

void describe('nvidia-health: judgeNvidiaGpu and thresholds', () => {
  void it('fails on uncorrectable ECC errors at the threshold; 0 turns it off', () => {
    assert.deepEqual(judgeNvidiaGpu({ address: A, eccUncorrectable: 2 }, T), {
      state: 'failed',
      reason: '2 uncorrectable ECC errors (volatile)',
    })
    assert.deepEqual(judgeNvidiaGpu({ address: A, eccUncorrectable: 1 }, T), {
      state: 'failed',
      reason: '1 uncorrectable ECC error (volatile)',
    })
    assert.equal(judgeNvidiaGpu({ address: A, eccUncorrectable: 0 }, T), undefined)
    const three = { ...T, eccUncorrectableFailed: 3 }
    assert.equal(judgeNvidiaGpu({ address: A, eccUncorrectable: 2 }, three), undefined)
    const off = { ...T, eccUncorrectableFailed: 0 }
    assert.equal(judgeNvidiaGpu({ address: A, eccUncorrectable: 50 }, off), undefined)
  })

  void it('retired pages pending: degraded by default, failed or off by option', () => {
    const r = { address: A, retiredPagesPending: true }
    assert.deepEqual(judgeNvidiaGpu(r, T), {
      state: 'degraded',
      reason: 'retired pages pending: reset the GPU',
    })
    assert.equal(judgeNvidiaGpu(r, { ...T, retiredPagesPending: 'failed' })?.state, 'failed')
    assert.equal(judgeNvidiaGpu(r, { ...T, retiredPagesPending: 'off' }), undefined)
  })

  void it('row remapping: a failure fails the GPU, a pending remap degrades it', () => {
    assert.deepEqual(
      judgeNvidiaGpu({ address: A, remappedRowFailure: true, remappedRowPending: true }, T),
      {
        state: 'failed',
        reason: 'row remapping failed: replace the GPU',
      },
    )
    assert.deepEqual(judgeNvidiaGpu({ address: A, remappedRowPending: true }, T), {
      state: 'degraded',
      reason: 'row remapping pending: reset the GPU',
    })
  })

  void it('parses the options, refusing bad ones with a ConfigError naming nvidia-gpu and the option', () => {
    assert.deepEqual(nvidiaHealthThresholds({}), T)
    assert.deepEqual(
      nvidiaHealthThresholds({ ecc_uncorrectable_failed: '0', retired_pages_pending: 'failed' }),
      { eccUncorrectableFailed: 0, retiredPagesPending: 'failed' },
    )
    for (const [options, option] of [
      [{ ecc_uncorrectable_failed: 'one' }, 'ecc_uncorrectable_failed'],
      [{ retired_pages_pending: 'warn' }, 'retired_pages_pending'],
    ] as const) {
      assert.throws(
        () => nvidiaHealthThresholds(options),
        (err: unknown) =>
          err instanceof ConfigError &&
          err.message.startsWith(`nvidia-gpu driver option ${option}: `) &&
          (err.details as { option: string }).option === option,
      )
    }
    assert.equal(NVIDIA_PCI_HEALTH.linkCheck, 'width')
  })
})

void describe('nvidia-health: lost GPUs and bindings', () => {
  void it('finds the addresses nvidia-smi names as lost, in its several wordings', () => {
    const text = [
      'Unable to determine the device handle for GPU 0000:3B:00.0: GPU is lost.  Reboot the system to recover this GPU',
      'Unable to determine the device handle for GPU0000:AF:00.0: Unknown Error',
      'Unable to determine the device handle for GPU1: 00000000:5E:00.0: Unknown Error',
      'GPU 0000:86:00.0 is fine, 0000:87:00.0 too',
    ].join('\n')
    assert.deepEqual([...lostGpuAddresses(text)].sort(), [
      '0000:3b:00.0',
      '0000:5e:00.0',
      '0000:af:00.0',
    ])
    assert.deepEqual([...lostGpuAddresses('GPU has fallen off the bus.')], [])
  })

  void it('tells the binding from a uevent file', () => {
    assert.equal(parseUeventDriver('DRIVER=nvidia\nPCI_SLOT_NAME=0000:3b:00.0\n'), 'nvidia')
    assert.equal(parseUeventDriver('DRIVER=vfio-pci\nPCI_SLOT_NAME=0000:3b:00.0\n'), 'other')
    assert.equal(parseUeventDriver('PCI_SLOT_NAME=0000:3b:00.0\n'), 'other')
    assert.equal(parseUeventDriver(undefined), 'unknown')
  })
})

void describe('nvidia-health: nvidiaSmiFindings', () => {
  void it('says nothing when nvidia-smi is absent', () => {
    assert.equal(nvidiaSmiFindings({ kind: 'absent' }, views([A, 'nvidia']), T).size, 0)
  })

  void it('judges the GPUs it lists', async () => {
    const run = ran(await fixtureFile('ecc', 'nvidia-smi-q-x.xml'))
    const out = nvidiaSmiFindings(run, views([A, 'nvidia'], [B, 'nvidia']), T)
    assert.deepEqual(
      [...out],
      [[A, { state: 'failed', reason: '2 uncorrectable ECC errors (volatile)' }]],
    )
  })

  void it('a GPU bound to nvidia but missing from a complete listing has fallen off the bus', () => {
    const text = doc(gpu(B))
    const fallen = { state: 'failed', reason: 'GPU has fallen off the bus' }
    assert.deepEqual(
      [...nvidiaSmiFindings(ran(text), views([A, 'nvidia'], [B, 'nvidia']), T)],
      [[A, fallen]],
    )
    // Not bound to nvidia (vfio-pci passthrough), unknown binding, or a PF not on the host: not judged.
    for (const binding of ['other', 'unknown', 'absent'] as const)
      assert.equal(nvidiaSmiFindings(ran(text), views([A, binding]), T).size, 0, binding)
    // A truncated listing, or one that lists nothing, proves nothing...
    assert.equal(nvidiaSmiFindings(ran(text.slice(0, -20)), views([A, 'nvidia']), T).size, 0)
    assert.equal(nvidiaSmiFindings(ran(doc()), views([A, 'nvidia']), T).size, 0)
    // ...unless it speaks of a lost GPU.
    const lost = doc('<!-- GPU is lost -->')
    assert.deepEqual([...nvidiaSmiFindings(ran(lost), views([A, 'nvidia']), T)], [[A, fallen]])
  })

  void it('a failing nvidia-smi makes the GPUs it should see unknown, and those it names lost failed', () => {
    const run: NvidiaSmiRun = {
      kind: 'failed',
      summary: 'exit code 15 (a GPU has fallen off the bus or is inaccessible)',
      output: 'Unable to determine the device handle for GPU 0000:D8:00.0: GPU is lost.',
    }
    const out = nvidiaSmiFindings(
      run,
      views([A, 'nvidia'], [B, 'nvidia'], ['0000:5e:00.0', 'unknown'], ['0000:86:00.0', 'other']),
      T,
    )
    const unknown = {
      state: 'unknown',
      reason: 'nvidia-smi failed: exit code 15 (a GPU has fallen off the bus or is inaccessible)',
    }
    assert.deepEqual(Object.fromEntries(out), {
      [A]: unknown,
      [B]: { state: 'failed', reason: 'GPU has fallen off the bus' },
      '0000:5e:00.0': unknown,
    })
  })
})

void describe('nvidia-smi: running it', () => {
  void it('a missing nvidia-smi is absent, with or without an error code', async () => {
    assert.deepEqual(
      nvidiaSmiFailure(
        new DriverError('command not found: nvidia-smi', { code: 'COMMAND_NOT_FOUND' }),
      ),
      { kind: 'absent' },
    )
    assert.deepEqual(await runNvidiaSmi(createMemoryHostProbe({})), { kind: 'absent' })
  })

  void it('a failing nvidia-smi is summed up by its exit code and last line of stderr', () => {
    const failed = (exitCode: number, stderr: string) =>
      new DriverError(`nvidia-smi -q -x failed (exit code ${exitCode}): ${stderr.trim()}`, {
        code: 'COMMAND_FAILED',
        details: { command: 'nvidia-smi', args: ['-q', '-x'], stderr, exitCode },
      })
    assert.deepEqual(nvidiaSmiFailure(failed(9, '')), {
      kind: 'failed',
      summary: 'exit code 9 (NVIDIA driver not loaded)',
      output: 'nvidia-smi -q -x failed (exit code 9): ',
    })
    const lost = failed(
      15,
      'Unable to determine the device handle for GPU 0000:3B:00.0: GPU is lost.  Reboot the system to recover this GPU\n',
    )
    const run = nvidiaSmiFailure(lost)
    assert.equal(run.kind, 'failed')
    assert.equal(
      run.kind === 'failed' && run.summary,
      'exit code 15 (a GPU has fallen off the bus or is inaccessible): Unable to determine the ' +
        'device handle for GPU 0000:3B:00.0: GPU is lost. Reboot the system to recover this GPU',
    )
    assert.deepEqual(run.kind === 'failed' && [...lostGpuAddresses(run.output)], [A])
  })

  void it('a time-out is a failure too', async () => {
    const timeout = new DriverError('nvidia-smi timed out after 30000 ms', {
      code: 'COMMAND_TIMEOUT',
      details: { command: 'nvidia-smi', args: ['-q', '-x'], stderr: '' },
    })
    const host = { ...createMemoryHostProbe({}), exec: () => Promise.reject(timeout) }
    assert.deepEqual(await runNvidiaSmi(host), {
      kind: 'failed',
      summary: 'timed out after 30000 ms',
      output: 'nvidia-smi timed out after 30000 ms',
    })
  })

  void it('returns what it printed', async () => {
    const host = createMemoryHostProbe({}, { 'nvidia-smi -q -x': doc(gpu(A)) })
    assert.deepEqual(await runNvidiaSmi(host), { kind: 'ran', text: doc(gpu(A)) })
  })
})
