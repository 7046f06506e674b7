import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createDeviceOps } from './device-ops.js'
import {
  createFixtureHostProbe,
  type FixtureHostProbe,
} from '../drivers/host-probe/fixture-host-probe.js'
import { noopLogger } from '../domain/logger.js'

const FREE = '0000:3b:00.1' // bound to its vendor driver, no override
const VFIO = '0000:3b:00.2' // already bound to vfio-pci
const LONER = '0000:3b:00.3' // no driver at all
const GPU = '0000:af:00.0' // mdev parent
const MDEV_NEW = '5a1f6f3c-3a0e-4c53-9d2a-0a4a5e3f9b11'
const MDEV_OLD = 'b0c4a9e2-8d5f-4f0e-a1f7-6c2d9e8b7a33'

/** A fake sysfs tree in a temp dir, read through the fixture probe (which records writes). */
async function fakeSysfs(root: string) {
  const put = async (p: string, data?: string) => {
    const full = path.join(root, p)
    if (data === undefined) return void (await mkdir(full, { recursive: true }))
    await mkdir(path.dirname(full), { recursive: true })
    await writeFile(full, data)
  }
  await put(`sys/bus/pci/devices/${FREE}/driver_override`, '(null)\n')
  await put(`sys/bus/pci/devices/${FREE}/driver`)
  await put(`sys/bus/pci/devices/${VFIO}/driver_override`, 'vfio-pci\n')
  await put(`sys/bus/pci/devices/${VFIO}/driver`)
  await put(`sys/bus/pci/drivers/vfio-pci/${VFIO}`)
  await put(`sys/bus/pci/devices/${LONER}/driver_override`, '(null)\n')
  const types = `sys/bus/pci/devices/${GPU}/mdev_supported_types`
  await put(`${types}/nvidia-35/available_instances`, '4\n')
  await put(`${types}/nvidia-35/devices/${MDEV_OLD}`)
  await put(`${types}/nvidia-36/available_instances`, '0\n')
  await put(`sys/bus/mdev/devices/${MDEV_OLD}`)
}

void describe('device operations over the HostProbe', () => {
  let root: string
  let probe: FixtureHostProbe
  let ops: ReturnType<typeof createDeviceOps>

  before(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'cyborg-sysfs-'))
    await fakeSysfs(root)
  })
  after(() => rm(root, { recursive: true, force: true }))
  const fresh = () => {
    probe = createFixtureHostProbe(root)
    ops = createDeviceOps({ host: probe, log: noopLogger })
  }

  void it('prepare writes driver_override, unbinds the current driver, reprobes: in that order', async () => {
    fresh()
    assert.deepEqual(await ops.prepare({ address: FREE.toUpperCase() }), {
      address: FREE,
      changed: true,
    })
    assert.deepEqual(probe.writes, [
      { path: `/sys/bus/pci/devices/${FREE}/driver_override`, data: 'vfio-pci' },
      { path: `/sys/bus/pci/devices/${FREE}/driver/unbind`, data: FREE },
      { path: '/sys/bus/pci/drivers_probe', data: FREE },
    ])
  })

  void it('prepare of a device without a driver does not unbind', async () => {
    fresh()
    await ops.prepare({ address: LONER })
    assert.deepEqual(
      probe.writes.map((w) => w.path),
      [`/sys/bus/pci/devices/${LONER}/driver_override`, '/sys/bus/pci/drivers_probe'],
    )
  })

  void it('prepare of a device already on vfio-pci is a no-op', async () => {
    fresh()
    assert.deepEqual(await ops.prepare({ address: VFIO }), { address: VFIO, changed: false })
    assert.deepEqual(probe.writes, [])
  })

  void it('release clears driver_override, unbinds from vfio-pci, reprobes; a free device is a no-op', async () => {
    fresh()
    assert.deepEqual(await ops.release({ address: VFIO }), { address: VFIO, changed: true })
    assert.deepEqual(probe.writes, [
      { path: `/sys/bus/pci/devices/${VFIO}/driver_override`, data: '\n' },
      { path: '/sys/bus/pci/drivers/vfio-pci/unbind', data: VFIO },
      { path: '/sys/bus/pci/drivers_probe', data: VFIO },
    ])
    fresh()
    assert.deepEqual(await ops.release({ address: FREE }), { address: FREE, changed: false })
    assert.deepEqual(probe.writes, [])
  })

  void it('createMdev writes the uuid to the type’s create file; an existing one is a no-op', async () => {
    fresh()
    assert.deepEqual(await ops.createMdev({ parent: GPU, type: 'nvidia-35', uuid: MDEV_NEW }), {
      uuid: MDEV_NEW,
      changed: true,
    })
    assert.deepEqual(probe.writes, [
      { path: `/sys/bus/pci/devices/${GPU}/mdev_supported_types/nvidia-35/create`, data: MDEV_NEW },
    ])
    fresh()
    assert.deepEqual(await ops.createMdev({ parent: GPU, type: 'nvidia-35', uuid: MDEV_OLD }), {
      uuid: MDEV_OLD,
      changed: false,
    })
    await assert.rejects(ops.createMdev({ parent: GPU, type: 'nvidia-36', uuid: MDEV_NEW }), {
      code: 'MDEV_EXHAUSTED',
    })
    await assert.rejects(ops.createMdev({ parent: GPU, type: 'nvidia-99', uuid: MDEV_NEW }), {
      code: 'MDEV_TYPE_NOT_FOUND',
    })
    await assert.rejects(ops.createMdev({ parent: FREE, type: 'nvidia-35', uuid: MDEV_NEW }), {
      code: 'MDEV_TYPE_NOT_FOUND',
    })
    assert.deepEqual(probe.writes, [])
  })

  void it('removeMdev writes 1 to the mdev’s remove file; a missing one is a no-op', async () => {
    fresh()
    assert.deepEqual(await ops.removeMdev({ uuid: MDEV_OLD }), { uuid: MDEV_OLD, changed: true })
    assert.deepEqual(await ops.removeMdev({ uuid: MDEV_NEW }), { uuid: MDEV_NEW, changed: false })
    assert.deepEqual(probe.writes, [
      { path: `/sys/bus/mdev/devices/${MDEV_OLD}/remove`, data: '1' },
    ])
  })

  void it('refuses malformed input and missing devices, writing nothing', async () => {
    fresh()
    const badAddresses = [
      '',
      '../../etc/passwd',
      `${FREE}/../../../etc`,
      '0000:3b:00.8',
      '0000:3b:20.0',
      '3b:00.1',
      42,
      null,
    ]
    for (const address of badAddresses) {
      await assert.rejects(
        ops.prepare({ address } as never),
        { code: 'PCI_ADDRESS_INVALID' },
        String(address),
      )
      await assert.rejects(
        ops.release({ address } as never),
        { code: 'PCI_ADDRESS_INVALID' },
        String(address),
      )
    }
    await assert.rejects(ops.prepare(undefined as never), { code: 'PCI_ADDRESS_INVALID' })
    await assert.rejects(ops.prepare({ address: '0000:99:00.0' }), { code: 'PCI_DEVICE_NOT_FOUND' })
    for (const type of [
      '..',
      '../nvidia-35',
      'nvidia-35/../../x',
      'a/b',
      '.hidden',
      '',
      'x'.repeat(200),
      7,
    ]) {
      await assert.rejects(
        ops.createMdev({ parent: GPU, type, uuid: MDEV_NEW } as never),
        { code: 'MDEV_TYPE_INVALID' },
        String(type),
      )
    }
    for (const uuid of ['', 'not-a-uuid', `${MDEV_OLD}/../x`, `../${MDEV_OLD}`, `${MDEV_OLD}0`]) {
      await assert.rejects(
        ops.createMdev({ parent: GPU, type: 'nvidia-35', uuid }),
        { code: 'UUID_INVALID' },
        uuid,
      )
      await assert.rejects(ops.removeMdev({ uuid }), { code: 'UUID_INVALID' }, uuid)
    }
    await assert.rejects(ops.createMdev({ parent: '../x', type: 'nvidia-35', uuid: MDEV_NEW }), {
      code: 'PCI_ADDRESS_INVALID',
    })
    assert.deepEqual(probe.writes, [])
  })

  void it('fails every operation when the agent has no host probe', async () => {
    const none = createDeviceOps({ host: undefined, log: noopLogger })
    await assert.rejects(none.prepare({ address: FREE }), { code: 'AGENT_NO_HOST_PROBE' })
    await assert.rejects(none.removeMdev({ uuid: MDEV_OLD }), { code: 'AGENT_NO_HOST_PROBE' })
  })
})
