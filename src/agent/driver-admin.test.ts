import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createAgent, type Agent } from './agent.js'
import { createDriverAdmin } from './driver-admin.js'
import { CACHE_FILES, createFileAgentCache } from './local-cache.js'
import { createInProcessBus } from '../bus/in-process-bus.js'
import type { MessageBus } from '../bus/bus.js'
import { createFakeDriver, FAKE_CONTROL_PATH } from '../drivers/fake.js'
import { DRIVER_REGISTRY } from '../drivers/index.js'
import { createFixtureHostProbe, type FixtureHostProbe } from '../drivers/fixture-host-probe.js'
import { createIntelFpgaDriver } from '../drivers/intel-fpga.js'
import { createPciDriver } from '../drivers/pci.js'
import { createXilinxFpgaDriver } from '../drivers/xilinx-fpga.js'
import type { AcceleratorDriver } from '../drivers/driver.js'
import { createAgentClient, type AgentRpc } from '../rpc/agent-rpc.js'
import type { ConductorRpc } from '../rpc/conductor-rpc.js'
import { DriverError, InvalidInputError, NotFoundError } from '../domain/errors.js'
import {
  AttachType,
  canonicalJson,
  controlPathAddress,
  type DiscoveredDevice,
  type InventorySnapshot,
  type PciAddress,
} from '../domain/inventory.js'
import { noopLogger } from '../domain/logger.js'
import { systemClock } from '../domain/time.js'

const fixtures = path.join(import.meta.dirname, '..', 'drivers', '__fixtures__')
const INTEL_IMAGE = '/var/lib/cyborg/images/crc32.gbs'
const XILINX_IMAGE = '/opt/xilinx/firmware/u200/base.xsabin'
const FPGACONF = `/usr/bin/fpgaconf --bus 0x1b --device 0x00 --function 0x0 ${INTEL_IMAGE}`
const XBMGMT = `/opt/xilinx/xrt/bin/xbmgmt program --device 0000:3b:00.0 --base --image ${XILINX_IMAGE}`
const GPU: PciAddress = { domain: '0000', bus: 'af', device: '00', function: '0' }

/** A driver with one device at `address` and an install step that records it, or fails when `broken`. */
function installableDriver(
  address: PciAddress,
  state: { installed: string[]; broken: boolean },
): AcceleratorDriver {
  const device: DiscoveredDevice = {
    type: 'GPU',
    vendor: '10de',
    model: '1eb8',
    stdBoardInfo: null,
    vendorBoardInfo: null,
    controlPath: { type: 'PCI', info: address },
    deployables: [
      {
        name: 'h1_0000:af:00.0',
        numAccelerators: 1,
        driverName: 'gpu-kit',
        attributes: [{ key: 'rc', value: 'PGPU' }],
        attachHandles: [{ type: AttachType.PCI, info: { ...address } }],
      },
    ],
  }
  return {
    name: 'gpu-kit',
    deviceType: 'GPU',
    discover: async () => [structuredClone(device)],
    async install(d) {
      if (state.broken) throw new Error('firmware 1.2 is older than the 2.0 this card needs')
      state.installed.push(canonicalJson(d.controlPath.info))
    },
  }
}

interface Rig {
  agent: Agent
  client: AgentRpc
  reports: InventorySnapshot[]
  host: FixtureHostProbe
  intelHost: FixtureHostProbe
  install: { installed: string[]; broken: boolean }
}

/** Control paths of the last report, as `bb:dd.f`. */
const reported = (rig: Rig) =>
  rig.reports.at(-1)!.devices.map((d) => controlPathAddress(d.controlPath).slice('0000:'.length))

async function startRig(bus: MessageBus, options: { cacheDir?: string } = {}): Promise<Rig> {
  const host = createFixtureHostProbe(path.join(fixtures, 'xilinx-fpga', 'typical'), {
    outputs: { [XBMGMT]: '' },
  })
  const intelHost = createFixtureHostProbe(path.join(fixtures, 'intel-fpga', 'pf-vfs'), {
    outputs: { [FPGACONF]: '' },
  })
  const deps = { host, hostname: 'h1' }
  const install = { installed: [], broken: false }
  const drivers = [
    createFakeDriver(deps),
    createIntelFpgaDriver({ host: intelHost, hostname: 'h1' }),
    createXilinxFpgaDriver(deps),
    createPciDriver(deps),
    installableDriver(GPU, install),
  ]
  const reports: InventorySnapshot[] = []
  const conductor = {
    reportInventory: async (req: InventorySnapshot) => {
      reports.push(req)
      return { changed: true, added: 0, updated: 0, removed: 0, pending: 0 }
    },
    heartbeat: async () => {},
  } as unknown as ConductorRpc
  const cache =
    options.cacheDir === undefined
      ? undefined
      : createFileAgentCache(options.cacheDir, { log: noopLogger })
  const agent = createAgent(
    {
      conductor,
      drivers,
      driverRegistry: DRIVER_REGISTRY,
      log: noopLogger,
      clock: systemClock,
      bus,
      hostProbe: host,
      cache,
    },
    { host: 'h1', periodicIntervalMs: 3_600_000 },
  )
  await agent.start()
  await agent.discoverNow()
  return {
    agent,
    client: createAgentClient(bus, 'h1', { timeoutMs: 5000 }),
    reports,
    host,
    intelHost,
    install,
  }
}

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

void describe('agent RPC 1.2: runtime driver management', () => {
  const bus = createInProcessBus()
  const dirs: string[] = []
  after(async () => {
    await bus.close()
    for (const dir of dirs) await rm(dir, { recursive: true, force: true })
  })

  void it('disabling a driver drops its devices from the next report; enabling brings them back', async () => {
    const rig = await startRig(bus)
    try {
      assert.deepEqual(reported(rig), ['0c:00.0', '1b:00.0', '3b:00.0', 'af:00.0'])
      const off = await rig.client.setDriverEnabled({ driver: 'xilinx-fpga', enabled: false })
      assert.equal(off.enabled, false)
      assert.equal(off.report.ok, true)
      assert.deepEqual(reported(rig), ['0c:00.0', '1b:00.0', 'af:00.0'])
      await rig.agent.discoverNow()
      assert.deepEqual(reported(rig), ['0c:00.0', '1b:00.0', 'af:00.0'])
      await rig.client.setDriverEnabled({ driver: 'xilinx-fpga', enabled: true })
      assert.deepEqual(reported(rig), ['0c:00.0', '1b:00.0', '3b:00.0', 'af:00.0'])
    } finally {
      await rig.agent.stop()
    }
  })

  void it('refuses unknown drivers, naming the known ones, and bad values', async () => {
    const rig = await startRig(bus)
    try {
      await assert.rejects(
        rig.client.setDriverEnabled({ driver: 'nvidia-gpu', enabled: false }),
        (err) => {
          assert.ok(err instanceof NotFoundError)
          assert.equal(
            err.message,
            'driver nvidia-gpu is not configured on this agent; known drivers: fake, intel-fpga, xilinx-fpga, pci, gpu-kit',
          )
          return true
        },
      )
      await assert.rejects(
        rig.client.setDriverEnabled({ driver: 'fake', enabled: 'no' as unknown as boolean }),
        { name: 'InvalidInputError' },
      )
      await assert.rejects(rig.client.updateDriverOptions({ driver: 'nope', options: {} }), {
        name: 'NotFoundError',
        code: 'DRIVER_NOT_FOUND',
      })
      await assert.rejects(
        rig.client.updateDriverOptions({ driver: 'pci', options: { x: 1 as unknown as string } }),
        { name: 'InvalidInputError' },
      )
    } finally {
      await rig.agent.stop()
    }
  })

  void it('rebuilds a driver with merged options, and keeps the old one when the factory refuses them', async () => {
    const rig = await startRig(bus)
    try {
      const changed = await rig.client.updateDriverOptions({
        driver: 'xilinx-fpga',
        options: { lspci: '/opt/none/lspci' },
      })
      assert.deepEqual(changed.options, { lspci: '/opt/none/lspci' })
      assert.deepEqual(changed.overrides, { lspci: '/opt/none/lspci' })
      assert.deepEqual(reported(rig), ['0c:00.0', '1b:00.0', 'af:00.0'])
      assert.ok(rig.host.execs.some((e) => e.command === '/opt/none/lspci'))
      await rig.client.updateDriverOptions({ driver: 'xilinx-fpga', options: { lspci: 'lspci' } })
      assert.deepEqual(reported(rig), ['0c:00.0', '1b:00.0', '3b:00.0', 'af:00.0'])
      const before = rig.reports.length
      await assert.rejects(
        rig.client.updateDriverOptions({
          driver: 'pci',
          options: { device_spec: '{"vendor_id": "zz"}' },
        }),
        (err) => {
          assert.ok(err instanceof InvalidInputError)
          assert.match(err.message, /^driver pci refused the options: /)
          return true
        },
      )
      assert.equal(rig.reports.length, before)
      await rig.agent.discoverNow()
      assert.deepEqual(reported(rig), ['0c:00.0', '1b:00.0', '3b:00.0', 'af:00.0'])
    } finally {
      await rig.agent.stop()
    }
  })

  void it('keeps driver settings in the agent cache across a restart', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'cyborg-agent-admin-'))
    dirs.push(dir)
    const first = await startRig(bus, { cacheDir: dir })
    await first.client.setDriverEnabled({ driver: 'fake', enabled: false })
    await first.client.updateDriverOptions({
      driver: 'xilinx-fpga',
      options: { lspci: '/opt/none/lspci' },
    })
    await first.agent.stop()
    const text = await readFile(path.join(dir, CACHE_FILES.driverSettings), 'utf8')
    assert.match(text, /^cyborg-agent-cache 1 sha256=[0-9a-f]{64}\n/)

    const second = await startRig(bus, { cacheDir: dir })
    try {
      assert.deepEqual(reported(second), ['1b:00.0', 'af:00.0'])
      const back = await second.client.setDriverEnabled({ driver: 'fake', enabled: true })
      assert.deepEqual(back.overrides, {})
      assert.deepEqual(reported(second), ['0c:00.0', '1b:00.0', 'af:00.0'])
    } finally {
      await second.agent.stop()
    }
  })
})
