/**
 * The driver registry: a literal map from the names used in `[agent] enabled_drivers` to driver
 * factories. No dynamic discovery: adding a driver means adding a line here.
 */
import type { AcceleratorDriver, DriverDeps, DriverFactory, DriverRegistry } from './driver.js'
import { createFakeDriver } from './fake/fake.js'
import { createPciDriver } from './pci/pci.js'
import { createNvidiaGpuDriver } from './nvidia-gpu/nvidia-gpu.js'
import { createNvmeSsdDriver } from './nvme-ssd/nvme-ssd.js'
import { createIntelQatDriver } from './intel-qat/intel-qat.js'
import { createIntelFpgaDriver } from './fpga/intel-fpga.js'
import { createXilinxFpgaDriver } from './fpga/xilinx-fpga.js'
import { createIntelNicDriver } from './intel-nic/intel-nic.js'
import { createRemoteDriver } from './remote.js'
import { ConfigError } from '../domain/errors.js'

/** Every built-in driver by name. */
export const DRIVERS = {
  fake: createFakeDriver,
  pci: createPciDriver,
  'nvidia-gpu': createNvidiaGpuDriver,
  'nvme-ssd': createNvmeSsdDriver,
  'intel-qat': createIntelQatDriver,
  'intel-fpga': createIntelFpgaDriver,
  'xilinx-fpga': createXilinxFpgaDriver,
  'intel-nic': createIntelNicDriver,
  remote: createRemoteDriver,
} as const satisfies Record<string, DriverFactory>

export type DriverName = keyof typeof DRIVERS

/** OpenStack Cyborg's entry-point names, accepted so that an existing cyborg.conf keeps working. */
export const DRIVER_ALIASES: Readonly<Record<string, DriverName>> = {
  fake_driver: 'fake',
  pci_driver: 'pci',
  nvidia_gpu_driver: 'nvidia-gpu',
  intel_qat_driver: 'intel-qat',
  intel_fpga_driver: 'intel-fpga',
  xilinx_fpga_driver: 'xilinx-fpga',
  generic_remote: 'remote',
}

/** The registry as the agent takes it (AgentDeps.driverRegistry), given by the composition root. */
export const DRIVER_REGISTRY: DriverRegistry = { factories: DRIVERS, aliases: DRIVER_ALIASES }

/** Valid names, for messages. */
export const driverNames = (): string[] => Object.keys(DRIVERS)

/**
 * Builds the named drivers, in order, once each.
 * @param options per-driver options, by driver name
 * @throws ConfigError for an unknown name, listing the valid ones
 */
export function createDrivers(
  names: readonly string[],
  deps: DriverDeps,
  options: Readonly<Record<string, Record<string, string>>> = {},
): AcceleratorDriver[] {
  const resolved: DriverName[] = []
  for (const raw of names) {
    const name = Object.hasOwn(DRIVERS, raw)
      ? (raw as DriverName)
      : Object.hasOwn(DRIVER_ALIASES, raw)
        ? DRIVER_ALIASES[raw]
        : undefined
    if (name === undefined) {
      throw new ConfigError(
        `unknown driver "${raw}" in [agent] enabled_drivers; possible values are: ${driverNames().join(', ')}`,
        { code: 'INVALID_DRIVER', details: { driver: raw, valid: driverNames() } },
      )
    }
    if (!resolved.includes(name)) resolved.push(name)
  }
  return resolved.map((name) => (DRIVERS[name] as DriverFactory)(deps, options[name]))
}
