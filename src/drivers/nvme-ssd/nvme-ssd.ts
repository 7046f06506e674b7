/**
 * The NVMe SSD driver: one SSD device per NVMe controller attached over PCIe.
 *
 * It reads `/sys/class/nvme/nvme<N>/` (Linux drivers/nvme/host/core.c attributes `model`,
 * `serial`, `firmware_rev`; Documentation/ABI/testing/sysfs-class-nvme) and the controller's PCI
 * function through its `device` link: `device/uevent` (`PCI_SLOT_NAME=`), `device/vendor`,
 * `device/device` (Documentation/ABI/testing/sysfs-bus-pci). Fabrics controllers (NVMe-oF, whose
 * `device` is not a PCI function) are skipped.
 *
 * Health (issue 15): the worst of the PCIe finding of the function (AER counters and link, read
 * through the same `device` link: pci-health.ts) and the controller's SMART log from nvme-cli when
 * it is installed (nvme-health.ts).
 */
import type { AcceleratorDriver, DriverDeps } from '../driver.js'
import {
  AttachType,
  DeviceType,
  type DiscoveredDevice,
  type ReportedHealth,
} from '../../domain/inventory/inventory.js'
import {
  parseHexId,
  parsePciAddress,
  parseUeventSlotName,
  pciHandleInfo,
  readOptional,
  readScanRoot,
  throwIfAborted,
} from '../pci/pci-sysfs.js'
import { OWNER_CYBORG, rcAndTraits, traitSegment, vendorTraitName } from '../traits.js'
import { withHealth, worstHealth } from '../health.js'
import { pciHealth, pciHealthThresholds, type PciHealthOptions } from '../pci/pci-health.js'
import { nvmeHealthThresholds, nvmeSmartLogHealth, type NvmeHealthOptions } from './nvme-health.js'
import { createNvmeSampler } from './nvme-telemetry.js'
import type { DeviceStatsCapability } from '../../domain/device-telemetry.js'
import { cleanSettings, type CleanOptions } from '../clean.js'
import { createNvmeCleanSteps, NVME_CLEAN_TIMEOUT_S } from './nvme-clean.js'
import { thresholdOption } from '../health.js'

/** The resource class of every NVMe SSD deployable. */
export const SSD_RESOURCE_CLASS = 'CUSTOM_SSD'

/** Where the kernel lists NVMe controllers. */
export const NVME_CLASS_ROOT = '/sys/class/nvme'

/** What sysfs says about one NVMe controller. */
export interface NvmeController {
  /** `nvme0`. */
  name: string
  /** Canonical PCI address of the controller's function. */
  address: string
  vendorId: string
  productId: string
  model: string
  serial: string
  firmwareRev: string
}

/** A sysfs string attribute (space padded by the kernel, from the Identify Controller data): trimmed, controls removed. */
export function parseSysfsString(text: string | undefined): string {
  // eslint-disable-next-line no-control-regex
  return (text ?? '').replace(/[\u0000-\u001f\u007f]/g, ' ').trim()
}

/** The traits of an NVMe SSD, in attribute order. */
export function ssdTraits(vendorId: string, productId: string): string[] {
  return [
    OWNER_CYBORG,
    `CUSTOM_SSD_${vendorTraitName(vendorId)}`,
    `CUSTOM_SSD_PRODUCT_ID_${traitSegment(productId)}`,
  ]
}

/**
 * Orders controller names by their number (nvme2 before nvme10), else by code unit. It stands in
 * for `localeCompare(…, 'en', { numeric: true })`, which gives the kernel's names the same order but
 * builds an ICU collator per call and makes the agent map about 2.5 MB of ICU's collation data
 * (docs/performance.md, "Footprint and memory, third pass").
 */
export function byControllerNumber(a: { name: string }, b: { name: string }): number {
  const x = NUMBERED.exec(a.name)
  const y = NUMBERED.exec(b.name)
  if (x && y && x[1] === y[1]) {
    const byNumber = Number(x[2]) - Number(y[2])
    if (byNumber !== 0) return byNumber
  }
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0
}
const NUMBERED = /^(\D*)(\d+)$/

/**
 * The controller that stands for each PCI function (pure): the lowest-numbered one, in address
 * order; a second controller on the same function is ignored.
 */
export function pickNvmeControllers(controllers: readonly NvmeController[]): NvmeController[] {
  const byAddress = new Map<string, NvmeController>()
  for (const c of [...controllers].sort(byControllerNumber)) {
    if (!byAddress.has(c.address)) byAddress.set(c.address, c)
  }
  return [...byAddress.values()].sort((a, b) =>
    a.address < b.address ? -1 : a.address > b.address ? 1 : 0,
  )
}

/**
 * Builds the SSD devices (pure), one per PCI function in address order (see
 * {@link pickNvmeControllers}); `health` gives a controller's finding by name (absent: ok).
 */
export function buildNvmeDevices(
  hostname: string,
  controllers: readonly NvmeController[],
  health: ReadonlyMap<string, ReportedHealth | undefined> = new Map(),
): DiscoveredDevice[] {
  return pickNvmeControllers(controllers).map((c) => {
    const pci = parsePciAddress(c.address)!
    return withHealth(
      {
        type: DeviceType.SSD,
        vendor: c.vendorId,
        model: c.model === '' ? c.productId : c.model,
        stdBoardInfo: { vendor_id: c.vendorId, product_id: c.productId },
        vendorBoardInfo: { controller: c.name, serial: c.serial, firmware_rev: c.firmwareRev },
        controlPath: { type: 'PCI' as const, info: { ...pci } },
        // The controller's serial is its identity (docs/identity.md), wherever it is plugged.
        ...(c.serial === '' ? {} : { serial: c.serial }),
        deployables: [
          {
            name: `${hostname}_${c.address}`,
            numAccelerators: 1,
            driverName: 'nvme-ssd',
            attributes: rcAndTraits(SSD_RESOURCE_CLASS, ssdTraits(c.vendorId, c.productId)),
            attachHandles: [{ type: AttachType.PCI, info: pciHandleInfo(pci) }],
          },
        ],
      },
      health.get(c.name),
    )
  })
}

/** Reads one controller; undefined if it is not PCI-attached or its ids are unreadable. */
export async function readNvmeController(
  deps: DriverDeps,
  root: string,
  name: string,
): Promise<NvmeController | undefined> {
  if (!/^nvme\d+$/.test(name)) return undefined
  const dir = `${root}/${name}`
  const [uevent, vendor, device, model, serial, firmware] = await Promise.all(
    ['device/uevent', 'device/vendor', 'device/device', 'model', 'serial', 'firmware_rev'].map(
      (f) => readOptional(deps.host, `${dir}/${f}`),
    ),
  )
  const address = uevent === undefined ? undefined : parseUeventSlotName(uevent)
  const vendorId = vendor === undefined ? undefined : parseHexId(vendor)
  const productId = device === undefined ? undefined : parseHexId(device)
  if (address === undefined || vendorId === undefined || productId === undefined) return undefined
  return {
    name,
    address,
    vendorId,
    productId,
    model: parseSysfsString(model),
    serial: parseSysfsString(serial),
    firmwareRev: parseSysfsString(firmware),
  }
}

/**
 * Options of the NVMe SSD driver: `sysfs_root`, the health thresholds (docs/drivers.md) of
 * nvme-health.ts and pci-health.ts, and `clean` / `clean_timeout` (nvme-clean.ts, docs/cleaning.md).
 */
export interface NvmeSsdDriverOptions extends PciHealthOptions, NvmeHealthOptions, CleanOptions {
  /** Milliseconds between two reads of the sanitize log while a sanitize runs. @default '5000' */
  sanitize_poll_ms?: string
  /** The sysfs class directory to scan. @default '/sys/class/nvme' */
  sysfs_root?: string
}

/**
 * Creates the NVMe SSD driver; `deviceStats()` gives each drive's temperature and wear from the
 * SMART log that health reads (nvme-telemetry.ts).
 * @throws ConfigError for a bad health threshold option
 */
export function createNvmeSsdDriver(
  deps: DriverDeps,
  options: NvmeSsdDriverOptions = {},
): AcceleratorDriver & DeviceStatsCapability {
  const { sysfs_root: root = NVME_CLASS_ROOT } = options
  const pciThresholds = pciHealthThresholds('nvme-ssd', options)
  const nvmeThresholds = nvmeHealthThresholds('nvme-ssd', options)
  const sampler = createNvmeSampler(deps.host, nvmeThresholds.smartLog)
  const settings = cleanSettings('nvme-ssd', options, NVME_CLEAN_TIMEOUT_S)
  const opts = options as Readonly<Record<string, string | undefined>>
  /** The controller standing for a PCI function, as discover() picks it. */
  const findController = async (address: string) => {
    const all: NvmeController[] = []
    for (const name of await readScanRoot(deps.host, root)) {
      const c = await readNvmeController(deps, root, name)
      if (c?.address === address) all.push(c)
    }
    return pickNvmeControllers(all)[0]
  }
  /** A controller's health: its PCI function's (read through the `device` link), then its SMART log. */
  const controllerHealth = async (c: NvmeController) =>
    worstHealth([
      await pciHealth(deps.host, 'device', pciThresholds, `${root}/${c.name}`),
      await nvmeSmartLogHealth(sampler.host, c.name, nvmeThresholds),
    ])
  return {
    name: 'nvme-ssd',
    deviceType: DeviceType.SSD,
    cleanSettings: settings,
    ...createNvmeCleanSteps(deps.host, {
      root,
      findController,
      timeoutMs: settings.timeoutMs,
      pollMs: thresholdOption('nvme-ssd', opts, 'sanitize_poll_ms', 5000),
    }),
    async discover({ signal } = {}) {
      throwIfAborted('nvme-ssd', signal)
      const controllers: NvmeController[] = []
      for (const name of (await readScanRoot(deps.host, root)).sort()) {
        throwIfAborted('nvme-ssd', signal)
        const c = await readNvmeController(deps, root, name)
        if (c) controllers.push(c)
      }
      const picked = pickNvmeControllers(controllers)
      sampler.discovered(picked)
      const health = new Map<string, ReportedHealth | undefined>()
      await Promise.all(
        picked.map(async (c) => {
          health.set(c.name, await controllerHealth(c))
        }),
      )
      throwIfAborted('nvme-ssd', signal)
      return buildNvmeDevices(deps.hostname, picked, health)
    },
    deviceStats: (opts) => sampler.deviceStats(opts),
  }
}
