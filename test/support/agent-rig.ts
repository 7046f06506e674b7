/**
 * An agent over fixture hosts for the agent's RPC tests: the fake, intel-fpga, xilinx-fpga and pci
 * drivers plus one driver with an install step, a conductor that records reports, an RPC client.
 */
import path from 'node:path'
import { createAgent, type Agent } from '../../src/agent/agent.js'
import { createFileAgentCache } from '../../src/agent/local-cache.js'
import type { MessageBus } from '../../src/bus/bus.js'
import { createFakeDriver } from '../../src/drivers/fake/fake.js'
import { DRIVER_REGISTRY } from '../../src/drivers/index.js'
import {
  createFixtureHostProbe,
  type FixtureHostProbe,
} from '../../src/drivers/host-probe/fixture-host-probe.js'
import { createIntelFpgaDriver } from '../../src/drivers/fpga/intel-fpga.js'
import { createPciDriver } from '../../src/drivers/pci/pci.js'
import { createXilinxFpgaDriver } from '../../src/drivers/fpga/xilinx-fpga.js'
import type { AcceleratorDriver } from '../../src/drivers/driver.js'
import { createAgentClient, type AgentRpc } from '../../src/rpc/agent-rpc.js'
import type { ConductorRpc } from '../../src/rpc/conductor-rpc.js'
import {
  AttachType,
  canonicalJson,
  controlPathAddress,
  type DiscoveredDevice,
  type InventorySnapshot,
  type PciAddress,
} from '../../src/domain/inventory/inventory.js'
import { noopLogger } from '../../src/domain/logger.js'
import { systemClock } from '../../src/domain/time.js'

const fixtures = path.join(import.meta.dirname, '..', '..', 'src', 'drivers', '__fixtures__')
export const INTEL_IMAGE = '/var/lib/cyborg/images/crc32.gbs'
export const XILINX_IMAGE = '/opt/xilinx/firmware/u200/base.xsabin'
export const FPGACONF = `/usr/bin/fpgaconf --bus 0x1b --device 0x00 --function 0x0 ${INTEL_IMAGE}`
export const XBMGMT = `/opt/xilinx/xrt/bin/xbmgmt program --device 0000:3b:00.0 --base --image ${XILINX_IMAGE}`
export const GPU: PciAddress = { domain: '0000', bus: 'af', device: '00', function: '0' }

/** A driver with one device at `address` and an install step that records it, or fails when `broken`. */
export function installableDriver(
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

export interface Rig {
  agent: Agent
  client: AgentRpc
  reports: InventorySnapshot[]
  host: FixtureHostProbe
  intelHost: FixtureHostProbe
  install: { installed: string[]; broken: boolean }
}

/** Control paths of the last report, as `bb:dd.f`. */
export const reported = (rig: Rig) =>
  rig.reports.at(-1)!.devices.map((d) => controlPathAddress(d.controlPath).slice('0000:'.length))

export async function startRig(bus: MessageBus, options: { cacheDir?: string } = {}): Promise<Rig> {
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
