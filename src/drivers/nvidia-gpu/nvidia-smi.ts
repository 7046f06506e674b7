/**
 * Reading `nvidia-smi -q -x` for the NVIDIA GPU driver: running it once per discovery (telling a
 * missing tool from a failing one), and the XML helpers its parsers share.
 *
 * Format: the `nvsmi_device_v*.dtd` XML shipped with the NVIDIA driver — one
 * `<gpu id="00000000:3B:00.0">` element per GPU the driver manages, inside `<nvidia_smi_log>`.
 * Only the elements the drivers use are read, with regular expressions: the output is flat enough,
 * and a truncated document still yields the GPUs before the cut.
 *
 * Exit codes (nvidia-smi(1), "RETURN VALUE"): 9 the NVIDIA driver is not loaded, 12 NVML is
 * missing, 15 a GPU has fallen off the bus or is otherwise inaccessible, among others.
 */
import type { HostProbe } from '../driver.js'
import { AppError } from '../../domain/errors.js'
import { rawErrorMessage } from '../../domain/error-message.js'
import { formatPciAddress, parsePciAddress } from '../pci/pci-sysfs.js'

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }
const decode = (s: string): string =>
  s.replace(/&(amp|lt|gt|quot|apos);/g, (_, e: string) => ENTITIES[e] ?? '')

/** The text of the first `<name>…</name>` leaf in `xml`, trimmed; undefined if absent, empty or `N/A`. */
export function xmlLeaf(xml: string, name: string): string | undefined {
  const m = new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)
  const v = m ? decode(m[1]!).trim() : ''
  return v === '' || v === 'N/A' ? undefined : v
}

/** The content of the first `<name>…</name>` element in `xml` (it may hold children); undefined if absent. */
export function xmlSection(xml: string, name: string): string | undefined {
  return new RegExp(`<${name}>([\\s\\S]*?)</${name}>`).exec(xml)?.[1]
}

/** The complete `<gpu id="…">` elements of a document: canonical PCI address and body, in order. */
export function gpuElements(text: string): { address: string; body: string }[] {
  const out: { address: string; body: string }[] = []
  for (const m of text.matchAll(/<gpu\s+id="([^"]*)"\s*>([\s\S]*?)<\/gpu>/g)) {
    const pci = parsePciAddress(m[1]!)
    if (pci) out.push({ address: formatPciAddress(pci), body: m[2]! })
  }
  return out
}

/** One MIG device (a GPU instance + compute instance pair) from nvidia-smi. */
export interface NvidiaSmiMigDevice {
  index: string
  gpuInstanceId: string
  computeInstanceId: string
  /** e.g. `9984 MiB`, when reported. */
  memoryTotal?: string
  multiprocessorCount?: string
}

/** One `<gpu>` of `nvidia-smi -q -x`. */
export interface NvidiaSmiGpu {
  /** Canonical PCI address. */
  address: string
  productName?: string
  uuid?: string
  /** The board's serial number (`<serial>`; absent on boards that print `N/A`): its identity. */
  serial?: string
  /** `Enabled` / `Disabled`, when the GPU supports MIG. */
  migMode?: string
  migDevices: NvidiaSmiMigDevice[]
}

/**
 * Parses `nvidia-smi -q -x`. Only complete `<gpu id="…">…</gpu>` elements with a valid PCI
 * address are returned (a truncated document yields the GPUs before the cut).
 */
export function parseNvidiaSmiXml(text: string): NvidiaSmiGpu[] {
  return gpuElements(text).map(({ address, body }) => {
    const gpu: NvidiaSmiGpu = { address, migDevices: [] }
    const productName = xmlLeaf(body, 'product_name')
    const uuid = xmlLeaf(body, 'uuid')
    const serial = xmlLeaf(body, 'serial')
    const migSection = xmlSection(body, 'mig_mode')
    const migMode = migSection === undefined ? undefined : xmlLeaf(migSection, 'current_mig')
    if (productName !== undefined) gpu.productName = productName
    if (uuid !== undefined) gpu.uuid = uuid
    if (serial !== undefined) gpu.serial = serial
    if (migMode !== undefined) gpu.migMode = migMode
    for (const d of body.matchAll(/<mig_device>([\s\S]*?)<\/mig_device>/g)) {
      const dev = d[1]!
      const index = xmlLeaf(dev, 'index')
      const gi = xmlLeaf(dev, 'gpu_instance_id')
      const ci = xmlLeaf(dev, 'compute_instance_id')
      if (index === undefined || gi === undefined || ci === undefined) continue
      const mig: NvidiaSmiMigDevice = { index, gpuInstanceId: gi, computeInstanceId: ci }
      const fb = xmlSection(dev, 'fb_memory_usage')
      const mem = fb === undefined ? undefined : xmlLeaf(fb, 'total')
      const sm = xmlLeaf(dev, 'multiprocessor_count')
      if (mem !== undefined) mig.memoryTotal = mem
      if (sm !== undefined) mig.multiprocessorCount = sm
      gpu.migDevices.push(mig)
    }
    return gpu
  })
}

/**
 * What one run of `nvidia-smi -q -x` gave:
 * - `absent`: not run (option off) or not installed — nvidia-smi has nothing to say;
 * - `ran`: its standard output;
 * - `failed`: installed but failed (non-zero exit, time-out). `summary` is one line for a reason;
 *   `output` is all the text the failure carried (message, stderr, stdout when the probe kept it),
 *   searched for the GPUs it names as lost.
 */
export type NvidiaSmiRun =
  | { kind: 'absent' }
  | { kind: 'ran'; text: string }
  | { kind: 'failed'; summary: string; output: string }

/** What a few exit codes of nvidia-smi(1) mean. */
const EXIT_MEANINGS: Readonly<Record<number, string>> = {
  9: 'NVIDIA driver not loaded',
  12: 'NVML library not found',
  15: 'a GPU has fallen off the bus or is inaccessible',
}

const lastLine = (text: string): string =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .at(-1) ?? ''

/** Classifies an error of `HostProbe.exec('nvidia-smi', …)` (pure). */
export function nvidiaSmiFailure(err: unknown): NvidiaSmiRun {
  const code = err instanceof AppError ? err.code : undefined
  const message = rawErrorMessage(err)
  // A probe without codes (a test double) says "command not found" in words.
  if (code === 'COMMAND_NOT_FOUND' || (code === undefined && /command not found/i.test(message)))
    return { kind: 'absent' }
  const details = err instanceof AppError ? (err.details ?? {}) : {}
  const text = (key: string): string =>
    typeof details[key] === 'string' ? (details[key] as string) : ''
  const exitCode = typeof details.exitCode === 'number' ? details.exitCode : undefined
  let summary: string
  if (exitCode !== undefined) {
    const meaning = EXIT_MEANINGS[exitCode]
    const said = lastLine(text('stderr')) || lastLine(text('stdout'))
    summary = `exit code ${exitCode}${meaning ? ` (${meaning})` : ''}${said ? `: ${said}` : ''}`
  } else {
    summary = lastLine(message).replace(/^nvidia-smi\s+/, '')
  }
  summary = summary.replace(/\s+/g, ' ')
  if (summary.length > 300) summary = `${summary.slice(0, 297)}...`
  const output = [message, text('stderr'), text('stdout')].filter((t) => t !== '').join('\n')
  return { kind: 'failed', summary: summary || 'unknown error', output }
}

/** Runs `nvidia-smi -q -x` once; never throws. */
export async function runNvidiaSmi(host: HostProbe): Promise<NvidiaSmiRun> {
  try {
    const text = await host.exec('nvidia-smi', ['-q', '-x'])
    return { kind: 'ran', text: typeof text === 'string' ? text : '' }
  } catch (err) {
    return nvidiaSmiFailure(err)
  }
}
