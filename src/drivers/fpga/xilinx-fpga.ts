/**
 * Xilinx FPGA (Alveo) driver. An Alveo card shows two PCI functions in one slot: the management PF
 * (kernel driver `xclmgmt`, used to program the shell) and the user PF (`xocl`, what a VM uses). Both are
 * one card, so they are merged into one device with one deployable and one accelerator (Nova sees one
 * unit) and two PCI handles, one per function.
 *
 * Discovery runs `lspci -nnkD` once (pciutils lspci(8): `-nn` names and ids, `-k` kernel driver,
 * `-D` domain). Device lines look like
 * `0000:3b:00.0 Processing accelerators [1200]: Xilinx Corporation Device [10ee:5000] (rev 01)`
 * and are followed by indented `Kernel driver in use: xclmgmt` lines.
 */
import type { AcceleratorDriver, DriverDeps } from '../driver.js'
import { AttachType, DeviceType, type DiscoveredDevice } from '../../domain/inventory/inventory.js'
import { AppError, DriverError } from '../../domain/errors.js'
import {
  formatPciAddress,
  parsePciAddress,
  pciHandleInfo,
  throwIfAborted,
} from '../pci/pci-sysfs.js'
import { rcAndTraits } from '../traits.js'
import { programTarget, runProgrammer } from './fpga-program.js'
import { cleanSettings, type CleanOptions } from '../clean.js'
import { createFpgaCleanSteps, FPGA_CLEAN_TIMEOUT_S } from './fpga-clean.js'
import { pciHealthThresholds, withPciHealth, type PciHealthOptions } from '../pci/pci-health.js'

/** XRT's management tool, the one OpenStack Cyborg's xilinx driver runs. */
export const XBMGMT = '/opt/xilinx/xrt/bin/xbmgmt'

/**
 * `xbmgmt program --device 0000:3b:00.0 --base --image <image>` (XRT xbmgmt(1); `--base` flashes
 * the shell). The device is the management PF in `dddd:bb:dd.f` form; Cyborg joins all four parts
 * with `:`, which is not a BDF xbmgmt accepts.
 */
export function xbmgmtArgs(bdf: string, imagePath: string): string[] {
  return ['program', '--device', bdf, '--base', '--image', imagePath]
}

/** HostProbe error codes that mean "no lspci here" (the fixture probe reports a missing host dir as a path). */
const EMPTY_HOST_CODES = new Set(['COMMAND_NOT_FOUND', 'HOST_PATH_NOT_FOUND'])

/** Xilinx's PCI vendor id. */
export const XILINX_VENDOR_ID = '10ee'

/** The resource class of every Xilinx FPGA deployable. */
export const XILINX_FPGA_RESOURCE_CLASS = 'FPGA'

/** One function of `lspci -nnkD` output. Ids are 4 lower-case hex digits. */
export interface LspciFunction {
  /** Canonical `dddd:bb:ss.f`. */
  address: string
  /** `1200` (class and subclass). */
  classCode: string
  /** `Processing accelerators`. */
  className: string
  vendorId: string
  productId: string
  /** The `Kernel driver in use:` value, if any. */
  driver?: string
}

const DEVICE_LINE =
  /^(\S+)\s+(.+?)\s+\[([0-9a-f]{4})\]:\s+.*\[([0-9a-f]{4}):([0-9a-f]{4})\](?:\s+\(rev [0-9a-f]+\))?(?:\s+\(prog-if [^)]*\))?\s*$/i

/** Parses `lspci -nnkD` (or `lspci -nnD`, `lspci -k -s <addr>` with `-nn`) output; garbage lines are skipped. */
export function parseLspciNnk(text: string): LspciFunction[] {
  const out: LspciFunction[] = []
  let current: LspciFunction | undefined
  for (const line of text.split('\n')) {
    if (/^\s/.test(line)) {
      const m = /^\s+Kernel driver in use:\s*(\S+)\s*$/.exec(line)
      if (current && m) current.driver = m[1]!
      continue
    }
    const m = DEVICE_LINE.exec(line)
    const pci = m ? parsePciAddress(m[1]!) : undefined
    current = undefined
    if (!m || !pci) continue
    current = {
      address: formatPciAddress(pci),
      classCode: m[3]!.toLowerCase(),
      className: m[2]!.trim(),
      vendorId: m[4]!.toLowerCase(),
      productId: m[5]!.toLowerCase(),
    }
    out.push(current)
  }
  return out
}

/** True for a function of an Alveo card: Xilinx, and a processing accelerator or bound to xclmgmt/xocl. */
export const isXilinxFpgaFunction = (f: LspciFunction): boolean =>
  f.vendorId === XILINX_VENDOR_ID &&
  (f.classCode === '1200' || f.driver === 'xclmgmt' || f.driver === 'xocl')

/** A card: the functions of one slot, management PF first. */
export interface XilinxCard {
  mgmt: LspciFunction
  user: LspciFunction | undefined
  /** Every function of the slot, in address order. */
  functions: LspciFunction[]
}

/**
 * Groups Xilinx functions by slot (`dddd:bb:ss`). The management PF is the one bound to `xclmgmt`,
 * else the lowest function; the user PF is the one bound to `xocl`, else the next function.
 */
export function groupXilinxCards(functions: readonly LspciFunction[]): XilinxCard[] {
  const slots = new Map<string, LspciFunction[]>()
  for (const f of functions.filter(isXilinxFpgaFunction)) {
    const slot = f.address.slice(0, f.address.lastIndexOf('.'))
    const list = slots.get(slot) ?? []
    if (!list.some((g) => g.address === f.address)) list.push(f)
    slots.set(slot, list)
  }
  return [...slots.keys()].sort().map((slot) => {
    const fns = slots.get(slot)!.sort((a, b) => (a.address < b.address ? -1 : 1))
    const mgmt = fns.find((f) => f.driver === 'xclmgmt') ?? fns[0]!
    const user = fns.find((f) => f !== mgmt && f.driver === 'xocl') ?? fns.find((f) => f !== mgmt)
    return { mgmt, user, functions: fns }
  })
}

/** The traits of a card: `CUSTOM_FPGA_XILINX`, `CUSTOM_FPGA_PRODUCT_ID_<mgmt PF id, upper case>`. */
export const xilinxTraits = (card: XilinxCard): string[] => [
  'CUSTOM_FPGA_XILINX',
  `CUSTOM_FPGA_PRODUCT_ID_${card.mgmt.productId.toUpperCase()}`,
]

/** Builds the device of one card; its control path is the management PF. */
export function xilinxDevice(card: XilinxCard, hostname: string): DiscoveredDevice {
  return {
    type: DeviceType.FPGA,
    vendor: `0x${XILINX_VENDOR_ID}`,
    model: `0x${card.mgmt.productId}`,
    stdBoardInfo: {
      vendor_id: `0x${XILINX_VENDOR_ID}`,
      device_id: `0x${card.mgmt.productId}`,
      class: card.mgmt.className,
    },
    vendorBoardInfo: {
      mgmt_pf: card.mgmt.address,
      mgmt_driver: card.mgmt.driver ?? '',
      user_pf: card.user?.address ?? '',
      user_driver: card.user?.driver ?? '',
    },
    controlPath: { type: 'PCI', info: parsePciAddress(card.mgmt.address)! },
    deployables: [
      {
        name: `${hostname}_${card.mgmt.address}`,
        numAccelerators: 1,
        driverName: 'xilinx-fpga',
        attributes: rcAndTraits(XILINX_FPGA_RESOURCE_CLASS, xilinxTraits(card)),
        attachHandles: card.functions.map((f) => ({
          type: AttachType.PCI,
          info: pciHandleInfo(parsePciAddress(f.address)!),
        })),
      },
    ],
  }
}

/**
 * Options of {@link createXilinxFpgaDriver} (strings, from config), with the PCIe health thresholds
 * of {@link PciHealthOptions}, read from the management PF under `/sys/bus/pci/devices`, and `clean`,
 * `clean_timeout` and `blank_image` (fpga-clean.ts, docs/cleaning.md).
 */
export interface XilinxFpgaDriverOptions extends PciHealthOptions, CleanOptions {
  /** The image cleaning flashes (`xbmgmt program --base`). @default none: cleaning is refused */
  blank_image?: string
  /** The lspci binary. @default 'lspci' */
  lspci?: string
}

/**
 * Creates the `xilinx-fpga` driver.
 * @throws ConfigError if a health option is invalid
 */
export function createXilinxFpgaDriver(
  deps: DriverDeps,
  options: XilinxFpgaDriverOptions = {},
): AcceleratorDriver {
  const { host, hostname } = deps
  const { lspci = 'lspci' } = options
  const thresholds = pciHealthThresholds('xilinx-fpga', options)
  return {
    name: 'xilinx-fpga',
    deviceType: DeviceType.FPGA,
    cleanSettings: cleanSettings('xilinx-fpga', options, FPGA_CLEAN_TIMEOUT_S),
    ...createFpgaCleanSteps(host, {
      driver: 'xilinx-fpga',
      section: 'xilinx_fpga',
      blankImage: options.blank_image?.trim() || undefined,
      command: (pci, image) => ({
        command: XBMGMT,
        args: xbmgmtArgs(formatPciAddress(pci), image),
      }),
    }),
    async discover(opts = {}) {
      throwIfAborted('xilinx-fpga', opts.signal)
      let text: string
      try {
        text = await host.exec(lspci, ['-nnkD'])
      } catch (err) {
        // No lspci on the host is an empty host for this driver, like a missing sysfs tree. Any other
        // failure (timeout, non-zero exit) throws: reporting [] would make the conductor drop the cards.
        if (err instanceof AppError && EMPTY_HOST_CODES.has(err.code)) return []
        throw new DriverError('xilinx-fpga: lspci failed', { code: 'LSPCI_FAILED', cause: err })
      }
      const devices = groupXilinxCards(parseLspciNnk(typeof text === 'string' ? text : '')).map(
        (c) => xilinxDevice(c, hostname),
      )
      throwIfAborted('xilinx-fpga', opts.signal)
      // The control path is the management PF: its AER counters and link are the card's.
      return withPciHealth(host, devices, thresholds)
    },
    async program(address, imagePath) {
      const pci = programTarget('xilinx-fpga', address)
      const args = xbmgmtArgs(formatPciAddress(pci), imagePath)
      await runProgrammer(host, { driver: 'xilinx-fpga', pci, imagePath, command: XBMGMT, args })
    },
  }
}
