/**
 * The health of NVIDIA GPUs as `nvidia-smi -q -x` shows it (issue 15), folded with the PCIe probe
 * of the GPU's PF (pci-health.ts; for GPUs only a narrower link counts, see {@link NVIDIA_PCI_HEALTH}).
 *
 * Per `<gpu id="…">` (nvsmi_device_v*.dtd):
 * - `<ecc_errors><volatile>` — uncorrectable ECC errors since the driver was loaded:
 *   `<dram_uncorrectable>` + `<sram_uncorrectable>` (drivers ≥ 450; newer ones split the SRAM count
 *   into `<sram_uncorrectable_parity>` and `<sram_uncorrectable_secded>`), or `<double_bit><total>`
 *   (older drivers). `N/A` (ECC off, or not supported) is no reading;
 * - `<retired_pages><pending_blacklist>` / `<pending_retirement>` `Yes`: a page retirement waits
 *   for a GPU reset (pre-Ampere GPUs);
 * - `<remapped_rows><remapped_row_failure>` (also `<remapped_row_failure_occurred>`) `Yes`: a row
 *   could not be remapped; `<remapped_row_pending>` `Yes`: a remap waits for a GPU reset (Ampere+);
 * - a GPU bound to the `nvidia` kernel driver (sysfs `uevent` `DRIVER=nvidia`) that nvidia-smi does
 *   not list while it lists others, or that its errors name as lost ("GPU is lost", "fallen off the
 *   bus", "Unable to determine the device handle"): the GPU has fallen off the bus.
 *
 * nvidia-smi not installed is no finding (the PCIe probe still runs); installed but failing makes
 * every GPU it should see `unknown`. GPUs bound to another driver (vfio-pci for passthrough) are
 * invisible to nvidia-smi and are judged by the PCIe probe only.
 */
import type { HostProbe } from '../driver.js'
import {
  controlPathAddress,
  type DiscoveredDevice,
  type ReportedHealth,
} from '../../domain/inventory/inventory.js'
import { choiceOption, counted, thresholdOption, withHealth, worstHealth } from '../health.js'
import { DEFAULT_PCI_HEALTH, withPciHealth, type PciHealthThresholds } from '../pci/pci-health.js'
import { formatPciAddress, parsePciAddress, readOptional } from '../pci/pci-sysfs.js'
import { gpuElements, xmlLeaf, xmlSection, type NvidiaSmiRun } from './nvidia-smi.js'

/** The PCIe defaults of nvidia-gpu: GPUs lower their link speed when idle, so only the width counts. */
export const NVIDIA_PCI_HEALTH: PciHealthThresholds = { ...DEFAULT_PCI_HEALTH, linkCheck: 'width' }

/** What a pending page retirement makes of a GPU. */
export type RetiredPagesPending = 'degraded' | 'failed' | 'off'

/** The nvidia-smi thresholds of the nvidia-gpu driver. */
export interface NvidiaHealthThresholds {
  /** Volatile uncorrectable ECC errors at which the GPU is `failed`; 0 = off. @default 1 */
  eccUncorrectableFailed: number
  /** @default 'degraded' */
  retiredPagesPending: RetiredPagesPending
}

export const DEFAULT_NVIDIA_HEALTH: NvidiaHealthThresholds = {
  eccUncorrectableFailed: 1,
  retiredPagesPending: 'degraded',
}

/** The nvidia-smi health options of the nvidia-gpu driver (strings, from config). */
export interface NvidiaHealthOptions {
  /** Volatile uncorrectable ECC errors at which a GPU is `failed`; `0` = off. @default '1' */
  ecc_uncorrectable_failed?: string
  /** `degraded`, `failed` or `off`: what retired pages pending a GPU reset make of it. @default 'degraded' */
  retired_pages_pending?: string
}

/**
 * The nvidia-smi thresholds from the driver's options.
 * @throws ConfigError naming the driver and the option
 */
export function nvidiaHealthThresholds(
  given: Readonly<NvidiaHealthOptions>,
): NvidiaHealthThresholds {
  const options = given as Readonly<Record<string, string | undefined>>
  return {
    eccUncorrectableFailed: thresholdOption(
      'nvidia-gpu',
      options,
      'ecc_uncorrectable_failed',
      DEFAULT_NVIDIA_HEALTH.eccUncorrectableFailed,
    ),
    retiredPagesPending: choiceOption(
      'nvidia-gpu',
      options,
      'retired_pages_pending',
      ['degraded', 'failed', 'off'],
      DEFAULT_NVIDIA_HEALTH.retiredPagesPending,
    ),
  }
}

/** What nvidia-smi shows of one GPU's health; a field is absent when not shown (or `N/A`). */
export interface NvidiaGpuHealthReading {
  /** Canonical PCI address. */
  address: string
  /** Volatile (since driver load) uncorrectable ECC errors. */
  eccUncorrectable?: number
  retiredPagesPending?: boolean
  remappedRowFailure?: boolean
  remappedRowPending?: boolean
}

const count = (xml: string, name: string): number | undefined => {
  const v = xmlLeaf(xml, name)
  return v !== undefined && /^\d{1,15}$/.test(v) ? Number(v) : undefined
}

const sum = (parts: readonly (number | undefined)[]): number | undefined => {
  const known = parts.filter((n): n is number => n !== undefined)
  return known.length === 0 ? undefined : known.reduce((a, b) => a + b, 0)
}

const yes = (xml: string, ...names: string[]): boolean | undefined => {
  const values = names.map((n) => xmlLeaf(xml, n)).filter((v) => v !== undefined)
  return values.length === 0 ? undefined : values.some((v) => /^yes$/i.test(v))
}

/** Volatile uncorrectable ECC errors of one `<gpu>` body; undefined when not shown. */
function volatileUncorrectable(body: string): number | undefined {
  const ecc = xmlSection(body, 'ecc_errors')
  const vol = ecc === undefined ? undefined : xmlSection(ecc, 'volatile')
  if (vol === undefined) return undefined
  const doubleBit = xmlSection(vol, 'double_bit')
  if (doubleBit !== undefined) return count(doubleBit, 'total')
  const sram =
    count(vol, 'sram_uncorrectable') ??
    sum([count(vol, 'sram_uncorrectable_parity'), count(vol, 'sram_uncorrectable_secded')])
  return sum([count(vol, 'dram_uncorrectable'), sram])
}

/** Parses the health elements of every complete `<gpu>` of `nvidia-smi -q -x` (pure). */
export function parseNvidiaSmiHealth(text: string): NvidiaGpuHealthReading[] {
  return gpuElements(text).map(({ address, body }) => {
    const reading: NvidiaGpuHealthReading = { address }
    const ecc = volatileUncorrectable(body)
    if (ecc !== undefined) reading.eccUncorrectable = ecc
    const retired = xmlSection(body, 'retired_pages')
    const pending =
      retired === undefined ? undefined : yes(retired, 'pending_blacklist', 'pending_retirement')
    if (pending !== undefined) reading.retiredPagesPending = pending
    const remapped = xmlSection(body, 'remapped_rows')
    if (remapped !== undefined) {
      const failure = yes(remapped, 'remapped_row_failure', 'remapped_row_failure_occurred')
      const rowPending = yes(remapped, 'remapped_row_pending')
      if (failure !== undefined) reading.remappedRowFailure = failure
      if (rowPending !== undefined) reading.remappedRowPending = rowPending
    }
    return reading
  })
}

/** Reasons, as operators read them. */
export const NVIDIA_REASONS = {
  retiredPagesPending: 'retired pages pending: reset the GPU',
  remappedRowFailure: 'row remapping failed: replace the GPU',
  remappedRowPending: 'row remapping pending: reset the GPU',
  fallenOffTheBus: 'GPU has fallen off the bus',
} as const

/** Judges one GPU's reading (pure); undefined when healthy. */
export function judgeNvidiaGpu(
  r: NvidiaGpuHealthReading,
  t: NvidiaHealthThresholds,
): ReportedHealth | undefined {
  const findings: ReportedHealth[] = []
  const ecc = r.eccUncorrectable
  if (t.eccUncorrectableFailed > 0 && ecc !== undefined && ecc >= t.eccUncorrectableFailed)
    findings.push({
      state: 'failed',
      reason: `${counted(ecc, 'uncorrectable ECC error')} (volatile)`,
    })
  if (r.retiredPagesPending === true && t.retiredPagesPending !== 'off')
    findings.push({ state: t.retiredPagesPending, reason: NVIDIA_REASONS.retiredPagesPending })
  if (r.remappedRowFailure === true)
    findings.push({ state: 'failed', reason: NVIDIA_REASONS.remappedRowFailure })
  if (r.remappedRowPending === true)
    findings.push({ state: 'degraded', reason: NVIDIA_REASONS.remappedRowPending })
  return worstHealth(findings)
}

const LOST_LINE = /GPU is lost|fallen off the bus|Unable to determine the device handle/i
const ADDRESS = /(?<![0-9a-f:])(?:[0-9a-f]{4,8}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7](?![0-9a-f])/gi

/** The canonical addresses of the GPUs that nvidia-smi's text names as lost (pure). */
export function lostGpuAddresses(text: string): Set<string> {
  const out = new Set<string>()
  for (const line of text.split('\n')) {
    if (!LOST_LINE.test(line)) continue
    for (const m of line.matchAll(ADDRESS)) {
      const pci = parsePciAddress(m[0])
      if (pci) out.add(formatPciAddress(pci))
    }
  }
  return out
}

/** How a GPU's PF is bound, for what nvidia-smi can see of it. */
export type GpuBinding =
  /** Bound to the `nvidia` kernel driver: nvidia-smi must list it. */
  | 'nvidia'
  /** Bound to another driver (vfio-pci, nouveau) or to none: nvidia-smi cannot see it. */
  | 'other'
  /** The `uevent` file could not be read. */
  | 'unknown'
  /** The PF is not on this host (only VFs are): nvidia-smi has nothing to say about it. */
  | 'absent'

/** The binding in a sysfs `uevent` file (`DRIVER=nvidia`); `unknown` when unreadable. */
export function parseUeventDriver(text: string | undefined): GpuBinding {
  if (text === undefined) return 'unknown'
  const driver = /^DRIVER=(\S+)\s*$/m.exec(text)?.[1]
  return driver === 'nvidia' ? 'nvidia' : 'other'
}

/**
 * The nvidia-smi findings per GPU address (pure): the judged readings of the GPUs it lists;
 * `failed` for a GPU it names as lost, or that is bound to `nvidia` but missing from a complete
 * document that lists other GPUs or speaks of a lost one; `unknown` for every GPU it should see
 * when it failed.
 */
export function nvidiaSmiFindings(
  run: NvidiaSmiRun,
  gpus: readonly { address: string; binding: GpuBinding }[],
  t: NvidiaHealthThresholds,
): Map<string, ReportedHealth> {
  const out = new Map<string, ReportedHealth>()
  if (run.kind === 'absent') return out
  const fallen: ReportedHealth = { state: 'failed', reason: NVIDIA_REASONS.fallenOffTheBus }
  if (run.kind === 'failed') {
    const lost = lostGpuAddresses(run.output)
    const unknown: ReportedHealth = {
      state: 'unknown',
      reason: `nvidia-smi failed: ${run.summary}`,
    }
    for (const g of gpus) {
      if (g.binding === 'absent') continue
      if (lost.has(g.address)) out.set(g.address, fallen)
      else if (g.binding !== 'other') out.set(g.address, unknown)
    }
    return out
  }
  const readings = new Map(parseNvidiaSmiHealth(run.text).map((r) => [r.address, r]))
  const lost = lostGpuAddresses(run.text)
  const complete = /<\/nvidia_smi_log>\s*$/.test(run.text)
  const missingIsLost =
    complete && (readings.size > 0 || /GPU is lost|fallen off the bus/i.test(run.text))
  for (const g of gpus) {
    if (g.binding === 'absent') continue
    const reading = readings.get(g.address)
    const found = lost.has(g.address)
      ? fallen
      : reading !== undefined
        ? judgeNvidiaGpu(reading, t)
        : missingIsLost && g.binding === 'nvidia'
          ? fallen
          : undefined
    if (found !== undefined) out.set(g.address, found)
  }
  return out
}

/** Inputs of {@link withNvidiaHealth} besides the devices. */
export interface NvidiaHealthInputs {
  /** The run of `nvidia-smi -q -x` the driver already made. */
  run: NvidiaSmiRun
  /** The sysfs root the driver scanned; AER, link and uevent files are read under it. */
  root: string
  /** Canonical addresses of the functions found under `root` (to tell a missing PF). */
  present: ReadonlySet<string>
  pci: PciHealthThresholds
  nvidia: NvidiaHealthThresholds
}

/** The GPU devices with their health: worst of the PF's PCIe finding and nvidia-smi's. */
export async function withNvidiaHealth(
  host: HostProbe,
  devices: readonly DiscoveredDevice[],
  inputs: NvidiaHealthInputs,
): Promise<DiscoveredDevice[]> {
  const { run, root, present } = inputs
  const withPci = await withPciHealth(host, devices, inputs.pci, { root })
  if (run.kind === 'absent') return withPci
  const gpus: { address: string; binding: GpuBinding }[] = []
  for (const d of withPci) {
    const address = controlPathAddress(d.controlPath)
    const binding = present.has(address)
      ? parseUeventDriver(await readOptional(host, `${root}/${address}/uevent`))
      : 'absent'
    gpus.push({ address, binding })
  }
  const findings = nvidiaSmiFindings(run, gpus, inputs.nvidia)
  return withPci.map((d) =>
    withHealth(d, worstHealth([d.health, findings.get(controlPathAddress(d.controlPath))])),
  )
}
