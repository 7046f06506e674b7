/**
 * Device telemetry of the NVIDIA GPU driver (issue 16): the usage figures of `nvidia-smi -q -x`,
 * per `<gpu id="…">` (nvsmi_device_v*.dtd):
 *
 * - `<utilization><gpu_util>45 %` → `utilization_ratio` 0.45;
 * - `<fb_memory_usage><used>` and `<total>` (`40960 MiB`) → `memory_used_bytes`, `memory_total_bytes`;
 * - `<temperature><gpu_temp>41 C` → `temperature_celsius`;
 * - `<gpu_power_readings>` (drivers ≥ 535) or `<power_readings>` (older): `<average_power_draw>`,
 *   `<power_draw>` or `<instant_power_draw>` (`70.00 W`, first present) → `power_watts`;
 * - `<ecc_errors><volatile>`: correctable = `dram_correctable` + `sram_correctable` (or
 *   `<single_bit><total>` on older drivers) → `ecc_correctable`; uncorrectable as the health check
 *   counts it (nvidia-health.ts) → `ecc_uncorrectable`.
 *
 * `N/A` (not supported, ECC off, a vGPU host that hides a figure) is no value. MIG instances and
 * processes carry their own `<fb_memory_usage>`, so they are cut out before reading the GPU's.
 *
 * nvidia-smi runs at most once per telemetry period: discovery's run is shared with the next
 * `deviceStats()` (see {@link createNvidiaSampler}).
 */
import type { HostProbe } from '../driver.js'
import type { DeviceSample, DeviceValues } from '../../domain/device-telemetry.js'
import { gpuElements, runNvidiaSmi, xmlLeaf, xmlSection, type NvidiaSmiRun } from './nvidia-smi.js'
import { parseNvidiaSmiHealth } from './nvidia-health.js'

const UNITS: Readonly<Record<string, number>> = {
  B: 1,
  KiB: 1024,
  MiB: 1024 ** 2,
  GiB: 1024 ** 3,
  TiB: 1024 ** 4,
}

/** A leaf's number followed by `unit` (a regular expression), e.g. `45 %`; undefined otherwise. */
function measured(xml: string | undefined, name: string, unit: string): number | undefined {
  const text = xml === undefined ? undefined : xmlLeaf(xml, name)
  const m = text === undefined ? null : new RegExp(`^(-?\\d+(?:\\.\\d+)?)\\s*${unit}$`).exec(text)
  return m ? Number(m[1]) : undefined
}

/** A memory size such as `40960 MiB` in bytes. */
function bytes(xml: string | undefined, name: string): number | undefined {
  const text = xml === undefined ? undefined : xmlLeaf(xml, name)
  const m = text === undefined ? null : /^(\d+(?:\.\d+)?)\s*(B|KiB|MiB|GiB|TiB)$/.exec(text)
  return m ? Math.round(Number(m[1]) * UNITS[m[2]!]!) : undefined
}

const count = (xml: string | undefined, name: string): number | undefined => {
  const v = xml === undefined ? undefined : xmlLeaf(xml, name)
  return v !== undefined && /^\d{1,15}$/.test(v) ? Number(v) : undefined
}

/** Volatile correctable ECC errors of one `<gpu>` body; undefined when not shown. */
function volatileCorrectable(body: string): number | undefined {
  const ecc = xmlSection(body, 'ecc_errors')
  const vol = ecc === undefined ? undefined : xmlSection(ecc, 'volatile')
  if (vol === undefined) return undefined
  const singleBit = xmlSection(vol, 'single_bit')
  if (singleBit !== undefined) return count(singleBit, 'total')
  const parts = [count(vol, 'dram_correctable'), count(vol, 'sram_correctable')]
  const known = parts.filter((n): n is number => n !== undefined)
  return known.length === 0 ? undefined : known.reduce((a, b) => a + b, 0)
}

/** The power a `<gpu>` body shows, newer element names first. */
function powerDraw(body: string): number | undefined {
  for (const section of ['gpu_power_readings', 'power_readings']) {
    const xml = xmlSection(body, section)
    for (const name of ['average_power_draw', 'power_draw', 'instant_power_draw']) {
      const w = measured(xml, name, 'W')
      if (w !== undefined) return w
    }
  }
  return undefined
}

/** Parses the usage of every complete `<gpu>` of `nvidia-smi -q -x` (pure); GPUs showing nothing are left out. */
export function parseNvidiaSmiSamples(text: string): DeviceSample[] {
  const uncorrectable = new Map(
    parseNvidiaSmiHealth(text).map((r) => [r.address, r.eccUncorrectable]),
  )
  const out: DeviceSample[] = []
  for (const { address, body: whole } of gpuElements(text)) {
    const body = whole
      .replace(/<mig_devices>[\s\S]*?<\/mig_devices>/g, '')
      .replace(/<processes>[\s\S]*?<\/processes>/g, '')
    const fb = xmlSection(body, 'fb_memory_usage')
    const util = measured(xmlSection(body, 'utilization'), 'gpu_util', '%')
    const found: DeviceValues = {
      utilization_ratio: util === undefined ? undefined : util / 100,
      memory_used_bytes: bytes(fb, 'used'),
      memory_total_bytes: bytes(fb, 'total'),
      temperature_celsius: measured(xmlSection(body, 'temperature'), 'gpu_temp', 'C'),
      power_watts: powerDraw(body),
      ecc_correctable: volatileCorrectable(body),
      ecc_uncorrectable: uncorrectable.get(address),
    }
    const values = Object.fromEntries(
      Object.entries(found).filter(([, v]) => v !== undefined),
    ) as DeviceValues
    if (Object.keys(values).length > 0) out.push({ controlPath: address, values })
  }
  return out
}

/** Shares one nvidia-smi run between discovery and telemetry. */
export interface NvidiaSampler {
  /** Runs nvidia-smi for discovery (or answers `absent` when the option is off); the next `deviceStats()` reuses this run. */
  run(): Promise<NvidiaSmiRun>
  /** The control paths of the GPUs discovery found: only they are sampled. */
  discovered(controlPaths: readonly string[]): void
  /** The samples of the last discovery's GPUs, from its run, or from a run of its own when no discovery ran since the last call. */
  deviceStats(options?: { signal?: AbortSignal }): Promise<DeviceSample[]>
}

/**
 * The agent publishes telemetry right after each period's discovery, so `deviceStats()` takes the
 * run that discovery started (even one still under way) instead of starting another: nvidia-smi
 * runs once per period. Only when no discovery ran since the previous call does it run its own,
 * and never on a host whose last discovery found no GPU.
 */
export function createNvidiaSampler(host: HostProbe, enabled: boolean): NvidiaSampler {
  let shared: Promise<NvidiaSmiRun> | undefined
  let gpus = new Set<string>()
  const start = (): Promise<NvidiaSmiRun> =>
    enabled ? runNvidiaSmi(host) : Promise.resolve({ kind: 'absent' })
  return {
    run() {
      const run = start()
      shared = run
      return run
    },
    discovered(controlPaths) {
      gpus = new Set(controlPaths)
    },
    async deviceStats({ signal } = {}) {
      const taken = shared
      shared = undefined
      if (gpus.size === 0 || !enabled || signal?.aborted) return []
      const run = await (taken ?? start())
      if (run.kind !== 'ran') return []
      return parseNvidiaSmiSamples(run.text).filter((s) => gpus.has(s.controlPath))
    },
  }
}
