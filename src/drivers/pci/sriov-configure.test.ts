import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import { createIntelQatDriver } from '../intel-qat/intel-qat.js'
import { createIntelNicDriver } from '../intel-nic/intel-nic.js'
import {
  createFixtureHostProbe,
  type FixtureHostProbeOptions,
} from '../host-probe/fixture-host-probe.js'
import type { AcceleratorDriver, HostProbe } from '../driver.js'
import { DriverError, InvalidInputError } from '../../domain/errors.js'
import { controlPathAddress, type DiscoveredDevice } from '../../domain/inventory/inventory.js'

const fixtures = path.join(import.meta.dirname, '..', '__fixtures__')
const QAT_PF = '0000:3d:00.0'
const NUMVFS = `/sys/bus/pci/devices/${QAT_PF}/sriov_numvfs`

function qat(options: FixtureHostProbeOptions = {}) {
  const host = createFixtureHostProbe(path.join(fixtures, 'intel-qat', 'sriov'), options)
  return { host, driver: createIntelQatDriver({ host, hostname: 'h' }) }
}

function nic() {
  const host = createFixtureHostProbe(path.join(fixtures, 'intel-nic', 'pf-vfs'))
  const driver = createIntelNicDriver(
    { host, hostname: 'h' },
    { physical_device_mappings: 'physnet1:eth2|eth3' },
  )
  return { host, driver }
}

/** The device at `address` in a new discovery. */
async function device(driver: AcceleratorDriver, address: string): Promise<DiscoveredDevice> {
  const found = (await driver.discover()).find((d) => controlPathAddress(d.controlPath) === address)
  assert.ok(found, `no device at ${address}`)
  return found
}

/** The PCI functions a device's deployables attach, as `bb:dd.f`. */
const units = (d: DiscoveredDevice): string[] =>
  d.deployables.flatMap((dep) =>
    dep.attachHandles.map((h) => `${h.info.bus}:${h.info.device}.${h.info.function}`),
  )

async function configure(driver: AcceleratorDriver, address: string, sriovNumvfs: number) {
  return driver.configure!(await device(driver, address), { sriovNumvfs })
}

void describe('SR-IOV configure: intel-qat', () => {
  void it('4 → 8 → 2 → 0 VFs: writes 0 then the count, and discovery shows the new VFs', async () => {
    const { host, driver } = qat()
    assert.deepEqual(units(await device(driver, QAT_PF)), [
      '3d:01.0',
      '3d:01.1',
      '3d:01.2',
      '3d:01.3',
    ])

    assert.deepEqual(await configure(driver, QAT_PF, 8), {
      changed: true,
      previous: { sriovNumvfs: 4 },
      applied: { sriovNumvfs: 8 },
    })
    const eight = await device(driver, QAT_PF)
    assert.deepEqual(
      units(eight),
      [0, 1, 2, 3, 4, 5, 6, 7].map((i) => `3d:01.${i}`),
    )
    assert.equal(eight.deployables[7]!.name, 'h_0000:3d:01.7')
    assert.deepEqual(eight.vendorBoardInfo, { services: 'sym;asym;dc', num_vfs: 8 })

    await configure(driver, QAT_PF, 2)
    assert.deepEqual(units(await device(driver, QAT_PF)), ['3d:01.0', '3d:01.1'])
    await configure(driver, QAT_PF, 0)
    // Without VFs the PF itself is the one deployable.
    assert.deepEqual(units(await device(driver, QAT_PF)), ['3d:00.0'])
    assert.deepEqual(
      host.writes.map((w) => [w.path, w.data]),
      [
        [NUMVFS, '0'],
        [NUMVFS, '8'],
        [NUMVFS, '0'],
        [NUMVFS, '2'],
        [NUMVFS, '0'],
      ],
    )
  })

  void it('all 16 VFs: addresses follow sriov_offset and sriov_stride across slots', async () => {
    const { driver } = qat()
    await configure(driver, QAT_PF, 16)
    const all = units(await device(driver, QAT_PF))
    assert.equal(all.length, 16)
    assert.deepEqual(
      [all[0], all[7], all[8], all[15]],
      ['3d:01.0', '3d:01.7', '3d:02.0', '3d:02.7'],
    )
  })

  void it('the count already set writes nothing', async () => {
    const { host, driver } = qat()
    assert.deepEqual(await configure(driver, QAT_PF, 4), {
      changed: false,
      previous: { sriovNumvfs: 4 },
      applied: { sriovNumvfs: 4 },
    })
    assert.deepEqual(host.writes, [])
  })

  void it('refuses more than sriov_totalvfs, naming sriov_numvfs and the max', async () => {
    const { host, driver } = qat()
    await assert.rejects(configure(driver, QAT_PF, 17), (err) => {
      assert.ok(err instanceof InvalidInputError)
      assert.equal(err.code, 'SRIOV_NUMVFS_OUT_OF_RANGE')
      assert.equal(err.details?.field, 'sriov_numvfs')
      assert.equal(err.details?.max, 16)
      assert.match(err.message, /^sriov_numvfs must be from 0 to 16 .*0000:3d:00\.0.*not 17$/)
      return true
    })
    assert.deepEqual(host.writes, [])
  })

  void it('refuses a PF without SR-IOV, a vGPU type and an aborted call', async () => {
    const { host, driver } = qat()
    await assert.rejects(configure(driver, '0000:6b:00.0', 2), {
      name: 'InvalidInputError',
      code: 'SRIOV_UNSUPPORTED',
      details: { field: 'sriov_numvfs', driver: 'intel-qat', address: '0000:6b:00.0' },
    })
    const pf = await device(driver, QAT_PF)
    await assert.rejects(driver.configure!(pf, { vgpuType: 'nvidia-471' }), {
      name: 'InvalidInputError',
      code: 'CONFIGURE_UNSUPPORTED',
      details: { field: 'vgpu_type', driver: 'intel-qat', address: QAT_PF },
    })
    await assert.rejects(
      driver.configure!(pf, { sriovNumvfs: 8 }, { signal: AbortSignal.abort() }),
      { code: 'ABORTED' },
    )
    assert.deepEqual(host.writes, [])
  })

  void it('a refused write puts the previous count back: CONFIGURE_FAILED, restored', async () => {
    const { host, driver } = qat({ failWrite: (p, data) => p === NUMVFS && data === '8' })
    await assert.rejects(configure(driver, QAT_PF, 8), (err) => {
      assert.ok(err instanceof DriverError)
      assert.equal(err.code, 'CONFIGURE_FAILED')
      assert.deepEqual(err.details, {
        field: 'sriov_numvfs',
        driver: 'intel-qat',
        address: QAT_PF,
        previous: 4,
        requested: 8,
        restored: true,
      })
      assert.match(err.message, /from 4 to 8 VFs \(cannot write .*EIO\); 4 put back$/)
      return true
    })
    assert.deepEqual(
      host.writes.map((w) => [w.data, w.failed ?? false]),
      [
        ['0', false],
        ['8', true],
        ['0', false],
        ['4', false],
      ],
    )
    assert.deepEqual(units(await device(driver, QAT_PF)), [
      '3d:01.0',
      '3d:01.1',
      '3d:01.2',
      '3d:01.3',
    ])
  })

  void it('a restore that fails too says so (restored: false) and leaves what the host has', async () => {
    const refused = new Set(['8', '4'])
    const { driver } = qat({ failWrite: (p, data) => p === NUMVFS && refused.has(data) })
    await assert.rejects(configure(driver, QAT_PF, 8), (err) => {
      assert.ok(err instanceof DriverError)
      assert.equal(err.code, 'CONFIGURE_FAILED')
      assert.equal(err.details?.restored, false)
      assert.match(err.message, /putting 4 back failed too$/)
      return true
    })
    assert.deepEqual(units(await device(driver, QAT_PF)), ['3d:00.0'])
  })

  void it('a count the host does not keep (read back differs) fails and is undone', async () => {
    const { host } = qat()
    // A host that takes the write of 8 without effect, as a PF driver that gave up silently.
    const lossy: HostProbe = {
      ...host,
      writeFile: (p, data) =>
        p === NUMVFS && data === '8' ? Promise.resolve() : host.writeFile(p, data),
    }
    const driver = createIntelQatDriver({ host: lossy, hostname: 'h' })
    await assert.rejects(configure(driver, QAT_PF, 8), (err) => {
      assert.ok(err instanceof DriverError)
      assert.equal(err.details?.restored, true)
      assert.match(err.message, /sriov_numvfs reads 0 after writing 8\); 4 put back$/)
      return true
    })
  })

  void it('a refused first write (EBUSY) whose restore is refused too: restored false', async () => {
    const { driver } = qat({
      failWrite: (p, data) =>
        p === NUMVFS && data === '0' ? new Error('EBUSY: VFs in use') : false,
    })
    await assert.rejects(configure(driver, QAT_PF, 2), (err) => {
      assert.ok(err instanceof DriverError)
      assert.equal(err.details?.restored, false)
      assert.match(err.message, /from 4 to 2 VFs \(EBUSY: VFs in use\)/)
      return true
    })
  })
})

void describe('SR-IOV configure: intel-nic', () => {
  void it('3 → 8 → 2 VFs on one port; the other port keeps its VFs', async () => {
    const { driver } = nic()
    const port = '0000:3b:00.0'
    assert.deepEqual(units(await device(driver, port)), ['3b:02.0', '3b:02.1', '3b:02.2'])
    await configure(driver, port, 8)
    const eight = await device(driver, port)
    assert.deepEqual(
      units(eight),
      [0, 1, 2, 3, 4, 5, 6, 7].map((i) => `3b:02.${i}`),
    )
    assert.deepEqual(eight.deployables[5]!.attachHandles[0]!.info, {
      domain: '0000',
      bus: '3b',
      device: '02',
      function: '5',
      physical_network: 'physnet1',
    })
    await configure(driver, port, 2)
    assert.deepEqual(units(await device(driver, port)), ['3b:02.0', '3b:02.1'])
    assert.deepEqual(units(await device(driver, '0000:3b:00.1')), ['3b:0a.0', '3b:0a.1'])
  })

  void it('refuses more than the port’s 64 VFs', async () => {
    const { driver } = nic()
    await assert.rejects(configure(driver, '0000:3b:00.1', 65), {
      code: 'SRIOV_NUMVFS_OUT_OF_RANGE',
      details: { field: 'sriov_numvfs', driver: 'intel-nic', address: '0000:3b:00.1', max: 64 },
    })
  })
})
