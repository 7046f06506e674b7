import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { createNvidiaGpuDriver } from './nvidia-gpu.js'
import { createFixtureHostProbe } from '../host-probe/fixture-host-probe.js'
import {
  formatVgpuTypeByAddress,
  parseVgpuTypeByAddress,
  VGPU_TYPE_BY_ADDRESS,
} from './nvidia-vgpu-config.js'
import type { AcceleratorDriver } from '../driver.js'
import { ConfigError, InvalidInputError } from '../../domain/errors.js'
import { controlPathAddress, type DiscoveredDevice } from '../../domain/inventory/inventory.js'

const fixtures = path.join(import.meta.dirname, '..', '__fixtures__', 'nvidia-gpu')
const GPU = '0000:3b:00.0'
const OTHER = '0000:d8:00.0'

/** The driver over a fixture case, built with `options` (as the agent rebuilds it). */
function driverOf(c: string, options: Record<string, string> = {}) {
  const host = createFixtureHostProbe(path.join(fixtures, c))
  return { host, driver: createNvidiaGpuDriver({ host, hostname: 'compute-1' }, options) }
}

async function device(driver: AcceleratorDriver, address: string): Promise<DiscoveredDevice> {
  const found = (await driver.discover()).find((d) => controlPathAddress(d.controlPath) === address)
  assert.ok(found, `no device at ${address}`)
  return found
}

const configure = async (driver: AcceleratorDriver, address: string, vgpuType: string) =>
  driver.configure!(await device(driver, address), { vgpuType })

/** Deployable name → [accelerators, vGPU trait, asked types of its handles]. */
const offer = (d: DiscoveredDevice) =>
  d.deployables.map((dep) => [
    dep.name,
    dep.numAccelerators,
    dep.attributes.find((a) => a.key === 'trait2')?.value,
    [...new Set(dep.attachHandles.map((h) => h.info.asked_type))],
  ])

void describe('nvidia-gpu configure: vGPU type', () => {
  void it('a chosen type is the only one the pGPU offers, with its trait and instance count', async () => {
    const { host, driver } = driverOf('vgpu')
    const outcome = await configure(driver, GPU, 'nvidia-319')
    assert.deepEqual(outcome, {
      changed: true,
      previous: { vgpuTypes: ['nvidia-222', 'nvidia-230', 'nvidia-319'] },
      applied: { vgpuType: 'nvidia-319', vgpuTypes: ['nvidia-319'] },
      options: { vgpu_type_by_address: '0000:3b:00.0=nvidia-319' },
    })
    assert.deepEqual(host.writes, [], 'nothing is written until a vGPU is created')

    // The agent merges the options into the overrides and rebuilds the driver.
    const { driver: rebuilt } = driverOf('vgpu', outcome.options)
    assert.deepEqual(offer(await device(rebuilt, GPU)), [
      ['compute-1_0000:3b:00.0_nvidia-319', 4, 'CUSTOM_NVIDIA_VGPU_T4_4C', ['nvidia-319']],
    ])
    assert.deepEqual(offer(await device(rebuilt, OTHER)), [
      ['compute-1_0000:d8:00.0_nvidia-222', 16, 'CUSTOM_NVIDIA_VGPU_T4_1B', ['nvidia-222']],
    ])
    assert.equal((await device(rebuilt, GPU)).deployables[0]!.attachHandles.length, 4)
  })

  void it('keeps the other pGPUs’ choices, and the same type again changes nothing', async () => {
    const { driver } = driverOf('vgpu', { [VGPU_TYPE_BY_ADDRESS]: `${OTHER}=nvidia-222` })
    const outcome = await configure(driver, GPU, 'nvidia-222')
    assert.deepEqual(outcome.options, {
      vgpu_type_by_address: '0000:3b:00.0=nvidia-222,0000:d8:00.0=nvidia-222',
    })
    assert.deepEqual(await configure(driver, OTHER, 'nvidia-222'), {
      changed: false,
      previous: { vgpuType: 'nvidia-222', vgpuTypes: ['nvidia-222'] },
      applied: { vgpuType: 'nvidia-222', vgpuTypes: ['nvidia-222'] },
    })
  })

  void it('`*` drops the choice: every type is offered again, as before', async () => {
    const { driver } = driverOf('vgpu', { [VGPU_TYPE_BY_ADDRESS]: `${GPU}=nvidia-319` })
    const outcome = await configure(driver, GPU, '*')
    assert.deepEqual(outcome, {
      changed: true,
      previous: { vgpuType: 'nvidia-319', vgpuTypes: ['nvidia-319'] },
      applied: { vgpuTypes: ['nvidia-222', 'nvidia-230', 'nvidia-319'] },
      options: { vgpu_type_by_address: '' },
    })
    const expected = JSON.parse(
      readFileSync(path.join(fixtures, 'vgpu', 'expected.json'), 'utf8'),
    ) as unknown
    assert.deepEqual(await driverOf('vgpu', outcome.options).driver.discover(), expected)
  })

  void it('a chosen type wins over vgpu_types for its pGPU only', async () => {
    const { driver } = driverOf('vgpu', {
      vgpu_types: 'nvidia-222',
      [VGPU_TYPE_BY_ADDRESS]: `${GPU}=nvidia-319`,
    })
    assert.deepEqual(
      offer(await device(driver, GPU)).map((o) => o[0]),
      ['compute-1_0000:3b:00.0_nvidia-319'],
    )
    assert.deepEqual((await configure(driver, GPU, '*')).applied, { vgpuTypes: ['nvidia-222'] })
  })

  void it('refuses a type the pGPU does not have, naming vgpu_type and its types', async () => {
    const { driver } = driverOf('vgpu')
    await assert.rejects(configure(driver, GPU, 'nvidia-471'), (err) => {
      assert.ok(err instanceof InvalidInputError)
      assert.equal(err.code, 'VGPU_TYPE_UNKNOWN')
      assert.equal(err.details?.field, 'vgpu_type')
      assert.equal(
        err.message,
        'vgpu_type nvidia-471 is not an mdev type of 0000:3b:00.0; its types: nvidia-222, nvidia-230, nvidia-319',
      )
      return true
    })
  })

  void it('refuses a type with no instance (available_instances 0, no mdev)', async () => {
    const { driver } = driverOf('vgpu')
    await assert.rejects(configure(driver, GPU, 'nvidia-230'), {
      name: 'InvalidInputError',
      code: 'VGPU_TYPE_UNAVAILABLE',
      message: /^vgpu_type nvidia-230 has no instances on 0000:3b:00\.0/,
    })
  })

  void it('an SR-IOV GPU’s types are its VFs’; a GPU without mdev types has none', async () => {
    const { driver } = driverOf('sriov-vfs')
    const outcome = await configure(driver, GPU, 'nvidia-471')
    assert.deepEqual(outcome.applied, { vgpuType: 'nvidia-471', vgpuTypes: ['nvidia-471'] })
    const { driver: pgpu } = driverOf('pgpu')
    const [first] = await pgpu.discover()
    await assert.rejects(pgpu.configure!(first!, { vgpuType: 'nvidia-471' }), {
      code: 'VGPU_TYPE_UNKNOWN',
      message: /its types: none \(no mdev_supported_types\)$/,
    })
  })

  void it('refuses an SR-IOV change: CONFIGURE_UNSUPPORTED naming sriov_numvfs', async () => {
    const { driver } = driverOf('vgpu')
    await assert.rejects(driver.configure!(await device(driver, GPU), { sriovNumvfs: 4 }), {
      name: 'InvalidInputError',
      code: 'CONFIGURE_UNSUPPORTED',
      details: { field: 'sriov_numvfs', driver: 'nvidia-gpu', address: GPU },
    })
  })
})

void describe('nvidia-gpu option vgpu_type_by_address', () => {
  void it('parses and formats address=type lists, addresses made canonical', () => {
    const map = parseVgpuTypeByAddress(' 3B:00.0=nvidia-319 , ,0000:af:00.0=nvidia-471')
    assert.deepEqual(
      [...map],
      [
        ['0000:3b:00.0', 'nvidia-319'],
        ['0000:af:00.0', 'nvidia-471'],
      ],
    )
    assert.equal(formatVgpuTypeByAddress(map), '0000:3b:00.0=nvidia-319,0000:af:00.0=nvidia-471')
    assert.deepEqual([...parseVgpuTypeByAddress('')], [])
  })

  void it('refuses a malformed entry or an address given twice, at driver creation', () => {
    for (const [text, problem] of [
      ['nvidia-319', /'nvidia-319' is not <pci address>=<mdev type>/],
      ['0000:3b:00.0=', /is not <pci address>=<mdev type>/],
      ['0000:3b:00.0=../x', /is not <pci address>=<mdev type>/],
      ['3b:00.0=nvidia-1,0000:3b:00.0=nvidia-2', /0000:3b:00\.0 is given twice/],
    ] as const) {
      assert.throws(
        () => driverOf('vgpu', { [VGPU_TYPE_BY_ADDRESS]: text }),
        (err) => {
          assert.ok(err instanceof ConfigError)
          assert.equal(err.details?.option, 'vgpu_type_by_address')
          assert.match(err.message, /^nvidia-gpu driver option vgpu_type_by_address: /)
          assert.match(err.message, problem)
          return true
        },
      )
    }
  })
})
