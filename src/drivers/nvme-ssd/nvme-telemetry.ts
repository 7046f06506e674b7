/**
 * Device telemetry of the NVMe SSD driver (issue 16), from the SMART / Health Information log that
 * discovery already reads for health (`nvme smart-log /dev/nvme<N> -o json`, nvme-health.ts):
 *
 * - `temperature`: the composite temperature in kelvins, as the NVMe Base Specification gives it
 *   (nvme-cli's JSON printer, nvme-print-json.c `json_smart_log`, prints the raw value; its text
 *   output converts) → `temperature_celsius` = K − 273.15; 0 means not reported;
 * - `percent_used` (or `percentage_used`) → `wear_ratio` = percent / 100 (above 1 past the rating);
 * - `media_errors` → the counter `media_errors`.
 *
 * `smart_log = false` (an agent that cannot open `/dev/nvme*`) gives no samples. The log is read
 * at most once per period: discovery's read is shared with the next `deviceStats()`.
 */
import type { HostProbe } from '../driver.js'
import type { DeviceSample, DeviceValues } from '../../domain/device-telemetry.js'
import { NVME_SMART_LOG_TIMEOUT_MS, parseJsonObject } from './nvme-health.js'

/** A non-negative number as nvme-cli prints it (`3`, `3.0`, `"3"`); undefined otherwise. */
function number(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : undefined
  if (typeof value === 'string' && /^\s*\d+(?:\.\d+)?\s*$/.test(value)) return Number(value)
  return undefined
}

/** The usage values of one `nvme smart-log -o json` output (pure); undefined when there are none. */
export function parseNvmeSmartLogValues(text: string): DeviceValues | undefined {
  const o = parseJsonObject(text)
  if (o === undefined) return undefined
  const values: DeviceValues = {}
  const kelvin = number(o.temperature)
  if (kelvin !== undefined && kelvin > 0)
    values.temperature_celsius = Math.round((kelvin - 273.15) * 100) / 100
  const used = number(o.percent_used ?? o.percentage_used)
  if (used !== undefined) values.wear_ratio = used / 100
  const media = number(o.media_errors)
  if (media !== undefined) values.counters = { media_errors: media }
  return Object.keys(values).length === 0 ? undefined : values
}

/** What one smart-log run gave: its output, or nothing (failed, not installed). */
type Read = Promise<string | undefined>

/** Shares each controller's smart-log between discovery and telemetry. */
export interface NvmeSampler {
  /**
   * The probe discovery's health check runs through: a `nvme smart-log /dev/<controller> …` it
   * runs is remembered for the next `deviceStats()`; everything else goes straight to the host.
   */
  readonly host: HostProbe
  /** The controllers discovery kept (name → canonical PCI address of their function). */
  discovered(controllers: readonly { name: string; address: string }[]): void
  /** One sample per discovered controller that shows a value. */
  deviceStats(options?: { signal?: AbortSignal }): Promise<DeviceSample[]>
}

const smartLogArgs = (controller: string) => ['smart-log', `/dev/${controller}`, '-o', 'json']

/** See {@link NvmeSampler}; `enabled` is the driver's `smart_log` option. */
export function createNvmeSampler(host: HostProbe, enabled: boolean): NvmeSampler {
  let reads = new Map<string, Read>()
  let controllers: readonly { name: string; address: string }[] = []
  const settle = (p: Promise<string>): Read =>
    p.then(
      (text) => text,
      () => undefined,
    )
  const probe: HostProbe = {
    readFile: (path) => host.readFile(path),
    readDir: (path) => host.readDir(path),
    exists: (path) => host.exists(path),
    writeFile: (path, data) => host.writeFile(path, data),
    exec(command, args, options) {
      const run = host.exec(command, args, options)
      const device = /^\/dev\/(nvme\d+)$/.exec(args[1] ?? '')?.[1]
      if (command === 'nvme' && args[0] === 'smart-log' && device) reads.set(device, settle(run))
      return run
    },
  }
  return {
    host: probe,
    discovered(list) {
      controllers = [...list]
    },
    async deviceStats({ signal } = {}) {
      const taken = reads
      reads = new Map()
      if (!enabled || signal?.aborted) return []
      const samples = await Promise.all(
        controllers.map(async (c): Promise<DeviceSample | undefined> => {
          const text = await (taken.get(c.name) ??
            settle(
              host.exec('nvme', smartLogArgs(c.name), { timeoutMs: NVME_SMART_LOG_TIMEOUT_MS }),
            ))
          const values = text === undefined ? undefined : parseNvmeSmartLogValues(text)
          return values && { controlPath: c.address, values }
        }),
      )
      return samples.filter((s): s is DeviceSample => s !== undefined)
    },
  }
}
