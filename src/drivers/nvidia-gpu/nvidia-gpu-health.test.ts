/** nvidia-gpu's discovered health (docs/health.md), from the recorded `ecc` host and variants of it. */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createNvidiaGpuDriver } from './nvidia-gpu.js'
import { createFixtureHostProbe } from '../host-probe/fixture-host-probe.js'
import { createMemoryHostProbe } from '../driver-contract.case.js'
import { DriverError } from '../../domain/errors.js'

const fixture = (c: string): string =>
  new URL(`../__fixtures__/nvidia-gpu/${c}`, import.meta.url).pathname
const fixtureFile = (c: string, f: string): Promise<string> =>
  createFixtureHostProbe('/').readFile(`${fixture(c)}/${f}`)

void describe('nvidia-gpu: health', () => {
  const A = '00000000:3B:00.0'
  const fallen = { state: 'failed', reason: 'GPU has fallen off the bus' }
  const health = async (
    options: Record<string, string> = {},
    host = createFixtureHostProbe(fixture('ecc')),
  ) =>
    (await createNvidiaGpuDriver({ host, hostname: 'h' }, options).discover()).map((d) => d.health)

  void it('ecc: GPU A fails with its volatile ECC count, B is healthy; nvidia-smi runs once', async () => {
    const host = createFixtureHostProbe(fixture('ecc'))
    assert.deepEqual(await health({}, host), [
      { state: 'failed', reason: '2 uncorrectable ECC errors (volatile)' },
      undefined,
    ])
    assert.equal(host.execs.filter((e) => e.command === 'nvidia-smi').length, 1)
  })

  void it('the ECC threshold is an option (0 = off); nvidia_smi = false leaves the PCIe probe only', async () => {
    assert.deepEqual(await health({ ecc_uncorrectable_failed: '3' }), [undefined, undefined])
    assert.deepEqual(await health({ ecc_uncorrectable_failed: '0' }), [undefined, undefined])
    assert.deepEqual(await health({ nvidia_smi: 'false' }), [undefined, undefined])
  })

  void it('an idle GPU at a lower link speed is healthy unless link_check = speed-and-width', async () => {
    const slow = { state: 'degraded', reason: 'PCIe link 2.5 GT/s, capable of 16 GT/s' }
    assert.deepEqual(
      await health({ ecc_uncorrectable_failed: '0', link_check: 'speed-and-width' }),
      [slow, slow],
    )
  })

  void it('a GPU bound to nvidia that nvidia-smi no longer lists has fallen off the bus', async () => {
    const xml = await fixtureFile('ecc', 'nvidia-smi-q-x.xml')
    const withoutA = xml.replace(new RegExp(`<gpu id="${A}">[\\s\\S]*?</gpu>`), '')
    const host = createFixtureHostProbe(fixture('ecc'), {
      outputs: { 'nvidia-smi -q -x': withoutA },
    })
    assert.deepEqual(await health({}, host), [fallen, undefined])
  })

  void it('a failing nvidia-smi makes its GPUs unknown, and the one it names lost failed', async () => {
    const failing = (exitCode: number, stderr: string) => ({
      ...createFixtureHostProbe(fixture('ecc')),
      exec: (command: string) =>
        Promise.reject(
          command === 'nvidia-smi'
            ? new DriverError('nvidia-smi -q -x failed', {
                code: 'COMMAND_FAILED',
                details: { stderr, exitCode },
              })
            : new DriverError('command not found', { code: 'COMMAND_NOT_FOUND' }),
        ),
    })
    const unknown = {
      state: 'unknown',
      reason: 'nvidia-smi failed: exit code 9 (NVIDIA driver not loaded)',
    }
    assert.deepEqual(await health({}, failing(9, '')), [unknown, unknown])
    const lost = `Unable to determine the device handle for GPU ${A}: GPU is lost.  Reboot the system to recover this GPU`
    const [a, b] = await health({}, failing(15, lost))
    assert.deepEqual(a, fallen)
    assert.equal(b?.state, 'unknown')
  })

  void it('refuses a bad health option at creation, naming the driver and the option', () => {
    const deps = { host: createMemoryHostProbe({}), hostname: 'h' }
    for (const [option, value] of [
      ['link_check', 'speed'],
      ['aer_correctable_degraded', '-5'],
      ['ecc_uncorrectable_failed', 'many'],
      ['retired_pages_pending', 'yes'],
    ] as const)
      assert.throws(() => createNvidiaGpuDriver(deps, { [option]: value }), {
        name: 'ConfigError',
        message: new RegExp(`^nvidia-gpu driver option ${option}: `),
      })
  })
})
