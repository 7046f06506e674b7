/**
 * The health every PCI-based driver reads of a function, from sysfs (issue 15):
 *
 * - PCIe AER counters, `aer_dev_fatal`, `aer_dev_nonfatal`, `aer_dev_correctable`
 *   (Documentation/ABI/testing/sysfs-bus-pci-devices-aer-stats in the Linux tree: one
 *   `<error name> <count>` per line, ending with `TOTAL_ERR_FATAL`, `TOTAL_ERR_NONFATAL`,
 *   `TOTAL_ERR_COR`). They count since boot and never go down; the files are absent when the
 *   function or the kernel has no AER, and then there is nothing to judge.
 * - A link trained below its capability: `current_link_speed` (`8.0 GT/s PCIe`; older kernels
 *   `8 GT/s`) below `max_link_speed`, or `current_link_width` below `max_link_width`
 *   (Documentation/ABI/testing/sysfs-bus-pci). An unknown speed (`Unknown`) is not judged.
 *
 * Thresholds are driver options (docs/health.md); `0` turns a check off.
 */
import type { HostProbe } from '../driver.js'
import {
  controlPathAddress,
  type DiscoveredDevice,
  type ReportedHealth,
} from '../../domain/inventory/inventory.js'
import { choiceOption, counted, thresholdOption, withHealth, worstHealth } from '../health.js'
import { readOptional } from './pci-sysfs.js'

/** Which link shortfall counts as degraded. GPUs lower their link speed when idle: see docs/health.md. */
export type LinkCheck = 'speed-and-width' | 'width' | 'off'

/** The PCIe thresholds of one driver. */
export interface PciHealthThresholds {
  /** Fatal AER errors since boot at which the device is `failed`. @default 1 */
  aerFatalFailed: number
  /** Non-fatal (uncorrectable) AER errors since boot at which it is `degraded`. @default 1 */
  aerNonfatalDegraded: number
  /** Correctable AER errors since boot at which it is `degraded`. @default 1000 */
  aerCorrectableDegraded: number
  /** @default 'speed-and-width' */
  linkCheck: LinkCheck
}

/** The option names, as operators set them (`[nvidia_gpu] aer_fatal_failed = 1`). */
export const PCI_HEALTH_OPTIONS = [
  'aer_fatal_failed',
  'aer_nonfatal_degraded',
  'aer_correctable_degraded',
  'link_check',
] as const

/**
 * The PCIe health options every PCI driver takes (strings, from config), parsed by
 * {@link pciHealthThresholds}. A driver's options interface extends this one.
 */
export interface PciHealthOptions {
  /** Fatal AER errors since boot at which the device is `failed`; `0` = off. @default '1' */
  aer_fatal_failed?: string
  /** Non-fatal AER errors since boot at which the device is `degraded`; `0` = off. @default '1' */
  aer_nonfatal_degraded?: string
  /** Correctable AER errors since boot at which the device is `degraded`; `0` = off. @default '1000' */
  aer_correctable_degraded?: string
  /**
   * `speed-and-width`: a link trained below its maximum speed or width is `degraded`; `width`: only
   * a narrower link; `off`: no link check. @default 'speed-and-width' ('width' for nvidia-gpu)
   */
  link_check?: string
}

export const DEFAULT_PCI_HEALTH: PciHealthThresholds = {
  aerFatalFailed: 1,
  aerNonfatalDegraded: 1,
  aerCorrectableDegraded: 1000,
  linkCheck: 'speed-and-width',
}

/**
 * The PCIe thresholds from a driver's options, over `defaults` (a driver may have its own, e.g.
 * nvidia-gpu checks the link width only).
 * @throws ConfigError naming the driver and the option
 */
export function pciHealthThresholds(
  driver: string,
  given: Readonly<PciHealthOptions>,
  defaults: PciHealthThresholds = DEFAULT_PCI_HEALTH,
): PciHealthThresholds {
  const options = given as Readonly<Record<string, string | undefined>>
  return {
    aerFatalFailed: thresholdOption(driver, options, 'aer_fatal_failed', defaults.aerFatalFailed),
    aerNonfatalDegraded: thresholdOption(
      driver,
      options,
      'aer_nonfatal_degraded',
      defaults.aerNonfatalDegraded,
    ),
    aerCorrectableDegraded: thresholdOption(
      driver,
      options,
      'aer_correctable_degraded',
      defaults.aerCorrectableDegraded,
    ),
    linkCheck: choiceOption(
      driver,
      options,
      'link_check',
      ['speed-and-width', 'width', 'off'],
      defaults.linkCheck,
    ),
  }
}

/** What sysfs shows of a function's PCIe health; undefined where a file is missing or unparsable. */
export interface PciHealthReading {
  aerFatal?: number
  aerNonfatal?: number
  aerCorrectable?: number
  /** GT/s. */
  currentSpeed?: number
  maxSpeed?: number
  currentWidth?: number
  maxWidth?: number
}

/** The `TOTAL_ERR_*` line of an AER counter file; undefined when there is none. */
export function parseAerTotal(text: string | undefined): number | undefined {
  const m = /^TOTAL_ERR_(?:FATAL|NONFATAL|COR)\s+(\d+)\s*$/m.exec(text ?? '')
  return m ? Number(m[1]) : undefined
}

/** `16.0 GT/s PCIe` or `8 GT/s` as GT/s; undefined for `Unknown` or garbage. */
export function parseLinkSpeed(text: string | undefined): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*GT\/s/.exec(text ?? '')
  return m ? Number(m[1]) : undefined
}

/** A link width (`16`, or `x16`); undefined for 0 or garbage. */
export function parseLinkWidth(text: string | undefined): number | undefined {
  const m = /^\s*x?(\d+)\s*$/.exec(text ?? '')
  return m && Number(m[1]) > 0 ? Number(m[1]) : undefined
}

/** Judges a reading (pure); undefined when healthy. */
export function judgePciHealth(
  r: PciHealthReading,
  t: PciHealthThresholds,
): ReportedHealth | undefined {
  const over = (n: number | undefined, limit: number) => limit > 0 && n !== undefined && n >= limit
  const findings: ReportedHealth[] = []
  if (over(r.aerFatal, t.aerFatalFailed))
    findings.push({ state: 'failed', reason: `${counted(r.aerFatal!, 'fatal PCIe AER error')}` })
  if (over(r.aerNonfatal, t.aerNonfatalDegraded))
    findings.push({
      state: 'degraded',
      reason: `${counted(r.aerNonfatal!, 'non-fatal PCIe AER error')}`,
    })
  if (over(r.aerCorrectable, t.aerCorrectableDegraded))
    findings.push({
      state: 'degraded',
      reason: `${counted(r.aerCorrectable!, 'correctable PCIe AER error')}`,
    })
  if (t.linkCheck !== 'off') {
    const { currentWidth: cw, maxWidth: mw, currentSpeed: cs, maxSpeed: ms } = r
    if (cw !== undefined && mw !== undefined && cw < mw)
      findings.push({ state: 'degraded', reason: `PCIe link x${cw}, capable of x${mw}` })
    if (t.linkCheck === 'speed-and-width' && cs !== undefined && ms !== undefined && cs < ms)
      findings.push({ state: 'degraded', reason: `PCIe link ${cs} GT/s, capable of ${ms} GT/s` })
  }
  return worstHealth(findings)
}

/** Reads the function's AER counters and link state under `root` (default /sys/bus/pci/devices). */
export async function readPciHealth(
  host: HostProbe,
  address: string,
  root = '/sys/bus/pci/devices',
): Promise<PciHealthReading> {
  const dir = `${root}/${address}`
  const files = [
    'aer_dev_fatal',
    'aer_dev_nonfatal',
    'aer_dev_correctable',
    'current_link_speed',
    'max_link_speed',
    'current_link_width',
    'max_link_width',
  ]
  const [fatal, nonfatal, cor, cs, ms, cw, mw] = await Promise.all(
    files.map((f) => readOptional(host, `${dir}/${f}`)),
  )
  const reading: PciHealthReading = {
    aerFatal: parseAerTotal(fatal),
    aerNonfatal: parseAerTotal(nonfatal),
    aerCorrectable: parseAerTotal(cor),
    currentSpeed: parseLinkSpeed(cs),
    maxSpeed: parseLinkSpeed(ms),
    currentWidth: parseLinkWidth(cw),
    maxWidth: parseLinkWidth(mw),
  }
  for (const k of Object.keys(reading) as (keyof PciHealthReading)[])
    if (reading[k] === undefined) delete reading[k]
  return reading
}

/** Reads and judges one function: the PCIe part of a device's health. */
export async function pciHealth(
  host: HostProbe,
  address: string,
  thresholds: PciHealthThresholds,
  root?: string,
): Promise<ReportedHealth | undefined> {
  return judgePciHealth(await readPciHealth(host, address, root), thresholds)
}

/**
 * Each device with the PCIe health of one of its functions folded into `health` (worst wins; a
 * healthy device is returned unchanged). `functionOf` names the function to read: by default the
 * device's control path (its PF); undefined skips the device (a control path that is not PCI).
 */
export async function withPciHealth(
  host: HostProbe,
  devices: readonly DiscoveredDevice[],
  thresholds: PciHealthThresholds,
  options: {
    root?: string | undefined
    functionOf?: (device: DiscoveredDevice) => string | undefined
  } = {},
): Promise<DiscoveredDevice[]> {
  const functionOf =
    options.functionOf ??
    ((d: DiscoveredDevice) =>
      d.controlPath.type === 'PCI' ? controlPathAddress(d.controlPath) : undefined)
  const t = thresholds
  const enabled =
    t.aerFatalFailed > 0 ||
    t.aerNonfatalDegraded > 0 ||
    t.aerCorrectableDegraded > 0 ||
    t.linkCheck !== 'off'
  if (!enabled) return [...devices]
  const out: DiscoveredDevice[] = []
  for (const device of devices) {
    const address = functionOf(device)
    const found =
      address === undefined ? undefined : await pciHealth(host, address, thresholds, options.root)
    out.push(withHealth(device, worstHealth([device.health, found])))
  }
  return out
}
