import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createDriverAdmin } from './driver-admin.js'
import { createInProcessBus } from '../bus/in-process-bus.js'
import { createFakeDriver, FAKE_CONTROL_PATH } from '../drivers/fake/fake.js'
import { DRIVER_REGISTRY } from '../drivers/index.js'
import { createFixtureHostProbe } from '../drivers/host-probe/fixture-host-probe.js'
import { DriverError, InvalidInputError, NotFoundError } from '../domain/errors.js'
import { canonicalJson } from '../domain/inventory/inventory.js'
import { noopLogger } from '../domain/logger.js'
import {
  startRig,
  GPU,
  INTEL_IMAGE,
  XILINX_IMAGE,
  FPGACONF,
  XBMGMT,
} from '../../test/support/agent-rig.js'

void describe('agent RPC 1.2: install', () => {
  const bus = createInProcessBus()
  after(() => bus.close())

  void it('runs the install step of the driver that reported the device, or succeeds without one', async () => {
    const rig = await startRig(bus)
    try {
      assert.deepEqual(await rig.client.install({ controlPath: GPU }), {
        ok: true,
        driver: 'gpu-kit',
        address: '0000:af:00.0',
      })
      assert.deepEqual(rig.install.installed, [canonicalJson(GPU)])
      const fake = await rig.client.install({ controlPath: { ...FAKE_CONTROL_PATH, bus: '0C' } })
      assert.deepEqual(fake, { ok: true, driver: 'fake', address: '0000:0c:00.0' })
    } finally {
      await rig.agent.stop()
    }
  })

  void it('answers a failed install with a DriverError naming driver, device and cause', async () => {
    const rig = await startRig(bus)
    try {
      rig.install.broken = true
      await assert.rejects(rig.client.install({ controlPath: GPU }), (err) => {
        assert.ok(err instanceof DriverError)
        assert.equal(err.code, 'INSTALL_FAILED')
        assert.equal(
          err.message,
          'driver gpu-kit could not install device 0000:af:00.0: firmware 1.2 is older than the 2.0 this card needs',
        )
        return true
      })
    } finally {
      await rig.agent.stop()
    }
  })

  void it('refuses a device that is not on this host, and a malformed control path', async () => {
    const rig = await startRig(bus)
    try {
      const elsewhere = { domain: '0000', bus: 'ff', device: '00', function: '0' }
      await assert.rejects(
        rig.client.install({ controlPath: elsewhere }),
        (err) => err instanceof NotFoundError && err.code === 'DEVICE_NOT_ON_HOST',
      )
      const bad = { domain: '0000', bus: '../..', device: '00', function: '0' }
      await assert.rejects(
        rig.client.install({ controlPath: bad }),
        (err) => err instanceof InvalidInputError && err.details?.field === 'controlPath',
      )
      await rig.client.setDriverEnabled({ driver: 'gpu-kit', enabled: false })
      await assert.rejects(rig.client.install({ controlPath: GPU }), NotFoundError)
    } finally {
      await rig.agent.stop()
    }
  })

  void it('discovers first when nothing was discovered yet', async () => {
    const fake = createFakeDriver({ host: createFixtureHostProbe('/nonexistent'), hostname: 'h1' })
    let discoveries = 0
    const admin = createDriverAdmin({
      drivers: [fake],
      registry: { factories: {}, aliases: DRIVER_REGISTRY.aliases },
      baseOptions: {},
      driverDeps: undefined,
      store: { load: async () => undefined, save: async () => {} },
      log: noopLogger,
      rediscover: async () => {
        discoveries++
        admin.recordDiscovery(new Map([['fake', await fake.discover()]]))
        return { changed: false, added: 0, updated: 0, removed: 0, pending: 0 }
      },
    })
    assert.equal((await admin.install({ controlPath: FAKE_CONTROL_PATH })).driver, 'fake')
    assert.equal((await admin.install({ controlPath: FAKE_CONTROL_PATH })).driver, 'fake')
    assert.equal(discoveries, 1)
  })
})

void describe('agent RPC 1.2: programFpga', () => {
  const bus = createInProcessBus()
  after(() => bus.close())

  void it('runs fpgaconf and xbmgmt on the card that owns the function, through the HostProbe', async () => {
    const rig = await startRig(bus)
    try {
      // A VF of the Intel PAC: programming targets its PF.
      assert.deepEqual(
        await rig.client.programFpga({ address: '0000:1b:00.1', imagePath: INTEL_IMAGE }),
        {
          ok: true,
          driver: 'intel-fpga',
          address: '0000:1b:00.0',
        },
      )
      assert.deepEqual(
        rig.intelHost.execs.map((e) => [e.command, ...e.args].join(' ')),
        [FPGACONF],
      )
      // The user PF of the Alveo card: programming targets the management PF.
      const xilinx = await rig.client.programFpga({
        address: '0000:3B:00.1',
        imagePath: XILINX_IMAGE,
      })
      assert.deepEqual(xilinx, { ok: true, driver: 'xilinx-fpga', address: '0000:3b:00.0' })
      assert.deepEqual(
        rig.host.execs
          .map((e) => [e.command, ...e.args].join(' '))
          .filter((l) => l.includes('xbmgmt')),
        [XBMGMT],
      )
      const fake = await rig.client.programFpga({ address: '0000:0c:00.0', imagePath: '/x.gbs' })
      assert.equal(fake.driver, 'fake')
    } finally {
      await rig.agent.stop()
    }
  })

  void it('refuses bad input, unknown functions and drivers that cannot program', async () => {
    const rig = await startRig(bus)
    try {
      const refused = (field: string, code: string) => (err: unknown) =>
        err instanceof InvalidInputError && err.details?.field === field && err.code === code
      for (const imagePath of ['images/a.gbs', '/a/../etc/shadow', '/a\nb', '', 42]) {
        const req = { address: '0000:1b:00.0', imagePath: imagePath as string }
        await assert.rejects(
          rig.client.programFpga(req),
          refused('imagePath', 'IMAGE_PATH_INVALID'),
        )
      }
      await assert.rejects(
        rig.client.programFpga({ address: '1b:00.0;', imagePath: INTEL_IMAGE }),
        refused('address', 'PCI_ADDRESS_INVALID'),
      )
      await assert.rejects(
        rig.client.programFpga({ address: '0000:99:00.0', imagePath: INTEL_IMAGE }),
        { name: 'NotFoundError', code: 'DEVICE_NOT_ON_HOST' },
      )
      await assert.rejects(
        rig.client.programFpga({ address: '0000:af:00.0', imagePath: INTEL_IMAGE }),
        {
          name: 'InvalidInputError',
          message: 'driver gpu-kit cannot program',
        },
      )
      await rig.client.setDriverEnabled({ driver: 'intel_fpga_driver', enabled: false })
      await assert.rejects(
        rig.client.programFpga({ address: '0000:1b:00.0', imagePath: INTEL_IMAGE }),
        NotFoundError,
      )
      assert.equal(rig.intelHost.execs.length, 0)
    } finally {
      await rig.agent.stop()
    }
  })
})
