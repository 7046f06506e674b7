/**
 * Intel FPGA (PAC) driver: finds Intel Programmable Acceleration Cards in PCI sysfs and reads the loaded
 * accelerator function (AFU) and the partial-reconfiguration region id through the FPGA driver's sysfs.
 *
 * Two kernel layouts are read, both below the PF's PCI directory `/sys/bus/pci/devices/<bdf>/`:
 * - upstream DFL (Documentation/fpga/dfl.rst; ABI sysfs-platform-dfl-port, sysfs-class-fpga-region):
 *   `fpga_region/region<N>/dfl-port.<M>/afu_id` and
 *   `fpga_region/region<N>/dfl-fme.<M>/dfl-fme-region.<K>/fpga_region/region<J>/compat_id`;
 * - the out-of-tree OPAE intel-fpga driver (the `/sys/class/fpga/intel-fpga-dev.<N>` devices):
 *   `fpga/intel-fpga-dev.<N>/intel-fpga-port.<M>/afu_id` and `…/intel-fpga-fme.<M>/pr/interface_id`.
 * Both ids are 128-bit values printed as 32 hex digits (dashes tolerated).
 *
 * A PF without VFs is one deployable with one accelerator and one PCI handle (the PF); a PF with VFs is
 * one deployable whose accelerators and handles are its VFs. VF functions are never scanned as PFs.
 *
 * Health (issue 15): the worst of the PF's PCIe finding (pci-health.ts) and the FME and port error
 * registers of the FPGA driver (opae-health.ts).
 */
import type { AcceleratorDriver, DriverDeps, HostProbe } from '../driver.js'
import {
  AttachType,
  DeviceType,
  type DiscoveredDevice,
  type PciAddress,
} from '../../domain/inventory/inventory.js'
import {
  createVfClaimer,
  listPciFunctions,
  parsePciAddress,
  pciHandleInfo,
  readDirOptional,
  readOptional,
  throwIfAborted,
  readVirtfns,
  PCI_DEVICES_ROOT,
} from '../pci/pci-sysfs.js'
import { rcAndTraits } from '../traits.js'
import { programTarget, runProgrammer } from './fpga-program.js'
import { cleanSettings, type CleanOptions } from '../clean.js'
import { createFpgaCleanSteps, FPGA_CLEAN_TIMEOUT_S } from './fpga-clean.js'
import { ConfigError } from '../../domain/errors.js'
import { withHealth, worstHealth } from '../health.js'
import { pciHealth, pciHealthThresholds, type PciHealthOptions } from '../pci/pci-health.js'
import {
  listFpgaNodes,
  opaeErrorsLevel,
  opaeHealth,
  type OpaeHealthOptions,
} from './opae-health.js'
import { readFpgaSamples } from './fpga-telemetry.js'
import type { DeviceStatsCapability } from '../../domain/device-telemetry.js'

/** OPAE's programming tool (opae-sdk tools/fpgaconf), the one OpenStack Cyborg's intel driver runs. */
export const FPGACONF = '/usr/bin/fpgaconf'

/**
 * fpgaconf's arguments: `--bus 0x3b --device 0x00 --function 0x0 <image>`. fpgaconf reads the
 * numbers with `strtoul(…, 0)`, so they must carry `0x`: a bare `3b` is refused ("invalid bus")
 * and a bare `10` would be read as decimal. The domain is not passed, as in Cyborg's driver.
 */
export function fpgaconfArgs(pci: PciAddress, imagePath: string): string[] {
  return [
    '--bus',
    `0x${pci.bus}`,
    '--device',
    `0x${pci.device}`,
    '--function',
    `0x${pci.function}`,
    imagePath,
  ]
}

/** Intel PAC PF device ids (vendor 8086) → model segment of the model trait (drivers/fpga/dfl-pci.c). */
export const INTEL_FPGA_PF_MODELS: Readonly<Record<string, string>> = {
  '09c4': 'PAC_ARRIA10',
  '0b2b': 'PAC_D5005',
  '0b30': 'PAC_N3000',
}

/** The resource class of every Intel FPGA deployable. */
export const INTEL_FPGA_RESOURCE_CLASS = 'FPGA'

/** A 128-bit id (`afu_id`, `interface_id`, `compat_id`) as 32 upper-case hex digits, else undefined. */
export function parseFpgaId(text: string): string | undefined {
  const t = text.trim().replace(/-/g, '').toUpperCase()
  return /^[0-9A-F]{32}$/.test(t) ? t : undefined
}

/** What discover() learned about one PAC. */
export interface IntelFpgaPf {
  /** Canonical PF address. */
  address: string
  /** 4 lower-case hex digits. */
  productId: string
  /** AFU ids (32 hex digits) of its ports, sorted, each once. */
  afuIds: string[]
  /** PR region / interface ids, sorted, each once. */
  regionIds: string[]
  /** Canonical VF addresses. */
  vfs: string[]
}

/** The traits of a PAC, in this order: vendor, model, function ids, region ids. */
export function intelFpgaTraits(pf: Omit<IntelFpgaPf, 'vfs' | 'address'>): string[] {
  return [
    'CUSTOM_FPGA_INTEL',
    `CUSTOM_FPGA_INTEL_${INTEL_FPGA_PF_MODELS[pf.productId] ?? pf.productId.toUpperCase()}`,
    ...pf.afuIds.map((id) => `CUSTOM_FPGA_FUNCTION_ID_INTEL_${id}`),
    ...pf.regionIds.map((id) => `CUSTOM_FPGA_REGION_INTEL_${id}`),
  ]
}

/** Builds the device of one PAC. */
export function intelFpgaDevice(pf: IntelFpgaPf, hostname: string): DiscoveredDevice {
  const units = pf.vfs.length > 0 ? pf.vfs : [pf.address]
  return {
    type: DeviceType.FPGA,
    vendor: '0x8086',
    model: INTEL_FPGA_PF_MODELS[pf.productId] ?? `0x${pf.productId}`,
    stdBoardInfo: { vendor_id: '0x8086', device_id: `0x${pf.productId}` },
    vendorBoardInfo: { afu_ids: pf.afuIds, region_ids: pf.regionIds },
    controlPath: { type: 'PCI', info: parsePciAddress(pf.address)! },
    deployables: [
      {
        name: `${hostname}_${pf.address}`,
        numAccelerators: units.length,
        driverName: 'intel-fpga',
        attributes: rcAndTraits(INTEL_FPGA_RESOURCE_CLASS, intelFpgaTraits(pf)),
        attachHandles: units.map((u) => ({
          type: AttachType.PCI,
          info: pciHandleInfo(parsePciAddress(u)!),
        })),
      },
    ],
  }
}

const uniqSorted = (ids: (string | undefined)[]): string[] =>
  [...new Set(ids.filter((i): i is string => i !== undefined))].sort()

/** Lists `dir`'s entries matching `re`, as full paths. */
const children = async (host: HostProbe, dir: string, re: RegExp): Promise<string[]> =>
  (await readDirOptional(host, dir)).filter((n) => re.test(n)).map((n) => `${dir}/${n}`)

const readId = async (host: HostProbe, path: string): Promise<string | undefined> => {
  const text = await readOptional(host, path)
  return text === undefined ? undefined : parseFpgaId(text)
}

/** Reads AFU and region ids of the PF at `dir` in both the DFL and the OPAE layouts. */
async function readFpgaIds(
  host: HostProbe,
  dir: string,
): Promise<{ afuIds: string[]; regionIds: string[] }> {
  const afu: Promise<string | undefined>[] = []
  const region: Promise<string | undefined>[] = []
  for (const node of await listFpgaNodes(host, dir)) {
    if (node.kind === 'port') afu.push(readId(host, `${node.path}/afu_id`))
    else if (node.layout === 'opae') region.push(readId(host, `${node.path}/pr/interface_id`))
    else {
      for (const fr of await children(host, node.path, /^dfl-fme-region\.\d+$/)) {
        for (const sub of await children(host, `${fr}/fpga_region`, /^region\d+$/)) {
          region.push(readId(host, `${sub}/compat_id`))
        }
      }
    }
  }
  return {
    afuIds: uniqSorted(await Promise.all(afu)),
    regionIds: uniqSorted(await Promise.all(region)),
  }
}

/**
 * Options of the `intel-fpga` driver: the health thresholds (docs/drivers.md), `opae_errors`
 * (opae-health.ts) and the PCIe ones (pci-health.ts); `clean`, `clean_timeout`, `blank_image` and
 * `blank_afu_id` (fpga-clean.ts, docs/cleaning.md).
 */
export type IntelFpgaDriverOptions = PciHealthOptions &
  OpaeHealthOptions &
  CleanOptions & {
    /** The image cleaning loads. @default none: cleaning is refused */
    blank_image?: string
    /** The AFU id the blank image gives, read back to verify. @default none: presence only */
    blank_afu_id?: string
  }

/**
 * Creates the `intel-fpga` driver; `deviceStats()` gives the temperature and power of the cards
 * its last discovery found (fpga-telemetry.ts).
 * @throws ConfigError for a bad health option
 */
export function createIntelFpgaDriver(
  deps: DriverDeps,
  options: IntelFpgaDriverOptions = {},
): AcceleratorDriver & DeviceStatsCapability {
  const { host, hostname } = deps
  const pciThresholds = pciHealthThresholds('intel-fpga', options)
  const opaeLevel = opaeErrorsLevel('intel-fpga', options)
  const blankAfuId = options.blank_afu_id?.trim() ? parseFpgaId(options.blank_afu_id) : undefined
  if (options.blank_afu_id?.trim() && blankAfuId === undefined) {
    throw new ConfigError(
      `intel-fpga driver option blank_afu_id: must be 32 hex digits (dashes allowed), got '${options.blank_afu_id}'`,
      { code: 'INVALID_DRIVER_OPTION', details: { driver: 'intel-fpga', option: 'blank_afu_id' } },
    )
  }
  const blankImage = options.blank_image?.trim() || undefined
  /** The PFs of the last discovery: telemetry reads their FMEs without scanning PCI again. */
  let cards: string[] = []
  return {
    name: 'intel-fpga',
    deviceType: DeviceType.FPGA,
    cleanSettings: cleanSettings('intel-fpga', options, FPGA_CLEAN_TIMEOUT_S),
    ...createFpgaCleanSteps(host, {
      driver: 'intel-fpga',
      section: 'intel_fpga',
      blankImage,
      command: (pci, image) => ({ command: FPGACONF, args: fpgaconfArgs(pci, image) }),
      ...(blankAfuId === undefined
        ? {}
        : {
            expectId: {
              id: blankAfuId,
              read: async (address: string) =>
                (await readFpgaIds(host, `${PCI_DEVICES_ROOT}/${address}`)).afuIds,
            },
          }),
    }),
    async discover({ signal } = {}) {
      throwIfAborted('intel-fpga', signal)
      const all = await listPciFunctions(host, {
        signal,
        filter: (f) => f.vendorId === '8086',
      })
      const pfSet = new Set(
        all
          .filter((f) => Object.hasOwn(INTEL_FPGA_PF_MODELS, f.productId) && f.physfn === undefined)
          .map((f) => f.address),
      )
      const claim = createVfClaimer(all, pfSet)
      cards = [...pfSet].sort()
      const devices: DiscoveredDevice[] = []
      for (const fn of all) {
        if (!pfSet.has(fn.address)) continue
        const dir = `${PCI_DEVICES_ROOT}/${fn.address}`
        const [ids, virtfn, pcie, opae] = await Promise.all([
          readFpgaIds(host, dir),
          readVirtfns(host, dir),
          pciHealth(host, fn.address, pciThresholds),
          opaeHealth(host, dir, opaeLevel),
        ])
        const vfs = claim(fn.address, virtfn)
        const pf = { address: fn.address, productId: fn.productId, ...ids, vfs }
        devices.push(withHealth(intelFpgaDevice(pf, hostname), worstHealth([pcie, opae])))
      }
      return devices
    },
    deviceStats: ({ signal } = {}) => readFpgaSamples(host, cards, signal),
    async program(address, imagePath) {
      const pci = programTarget('intel-fpga', address)
      await runProgrammer(host, {
        driver: 'intel-fpga',
        pci,
        imagePath,
        command: FPGACONF,
        args: fpgaconfArgs(pci, imagePath),
      })
    },
  }
}
