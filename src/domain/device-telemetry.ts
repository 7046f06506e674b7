/**
 * Per-device telemetry samples (issue 16; seed 000: "temporary data like the current usage of a
 * given accelerator will be broadcast via a message passing system and won't be stored"). A driver
 * that can read a device's usage offers the optional {@link DeviceStatsCapability}; the agent puts
 * the samples in its telemetry message, and the conductor (gauges) and the API (`GET
 * /v1/telemetry`) keep only the latest of each device in memory (telemetry-store.ts).
 *
 * Every value is optional: a driver gives what its hardware shows. Samples cross the bus, so
 * {@link cleanDeviceSamples} bounds them on both sides: canonical control paths, finite numbers,
 * at most {@link DEVICE_SAMPLE_LIMITS} devices and counters.
 */

/** The named values a sample may carry, in display order. */
export const DEVICE_VALUE_NAMES = [
  'utilization_ratio',
  'memory_used_bytes',
  'memory_total_bytes',
  'temperature_celsius',
  'power_watts',
  'ecc_correctable',
  'ecc_uncorrectable',
  'wear_ratio',
] as const

export type DeviceValueName = (typeof DEVICE_VALUE_NAMES)[number]

/**
 * What a driver read of one device: `utilization_ratio` (0 to 1), memory in bytes, temperature in
 * °C, power in W, volatile ECC error counts, `wear_ratio` (share of rated endurance used: 0 to 1,
 * beyond 1 for a drive past its rating, NVMe allows 255 %), and `counters`, other named counters
 * (`media_errors`, …; lower-case snake case).
 */
export type DeviceValues = { [K in DeviceValueName]?: number } & {
  counters?: Record<string, number>
}

/** One device's sample. */
export interface DeviceSample {
  /** The device's control path, its PF's PCI address as `dddd:bb:dd.f` (lower case). */
  controlPath: string
  values: DeviceValues
}

/**
 * An optional driver capability: a driver object with a `deviceStats()` method reads its devices'
 * usage. The agent detects it at run time and calls it once per telemetry period, with a time limit.
 */
export interface DeviceStatsCapability {
  deviceStats(options?: { signal?: AbortSignal }): Promise<DeviceSample[]>
}

/** How much one message may carry: devices per host, counters per device, counter name length. */
export const DEVICE_SAMPLE_LIMITS = { devices: 256, counters: 16, counterName: 64 } as const

const CANONICAL_PCI = /^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/
const COUNTER_NAME = new RegExp(`^[a-z][a-z0-9_]{0,${DEVICE_SAMPLE_LIMITS.counterName - 1}}$`)

/** True for `0000:3b:00.0`, false for anything else (upper case, short forms). */
export const isCanonicalPciAddress = (text: string): boolean => CANONICAL_PCI.test(text)

/** Rounds to 4 decimals (ratios) or 3 (the rest): readings are not more precise, and JSON stays short. */
const rounded = (value: number, decimals: number): number => {
  const f = 10 ** decimals
  return Math.round(value * f) / f
}

/** A value as kept: finite, in range (a utilisation beyond 1 is 1), rounded; undefined if unusable. */
function cleanValue(name: DeviceValueName, value: unknown): number | undefined {
  if (typeof value !== 'number' || !Number.isFinite(value)) return undefined
  if (name === 'temperature_celsius') return value < -273.15 ? undefined : rounded(value, 3)
  if (value < 0) return undefined
  if (name === 'utilization_ratio') return rounded(Math.min(value, 1), 4)
  if (name === 'wear_ratio') return rounded(value, 4)
  return rounded(value, 3)
}

/** The counters of a sample: valid names, finite non-negative numbers, at most 16, in name order. */
function cleanCounters(raw: unknown): Record<string, number> | undefined {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return undefined
  const kept = Object.entries(raw as Record<string, unknown>)
    .filter(
      (e): e is [string, number] =>
        COUNTER_NAME.test(e[0]) && typeof e[1] === 'number' && Number.isFinite(e[1]) && e[1] >= 0,
    )
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .slice(0, DEVICE_SAMPLE_LIMITS.counters)
  return kept.length === 0
    ? undefined
    : Object.fromEntries(kept.map(([k, v]) => [k, rounded(v, 3)]))
}

/** One sample's values, cleaned; undefined when nothing usable is left. */
export function cleanDeviceValues(raw: unknown): DeviceValues | undefined {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return undefined
  const given = raw as Record<string, unknown>
  const values: DeviceValues = {}
  for (const name of DEVICE_VALUE_NAMES) {
    const v = cleanValue(name, given[name])
    if (v !== undefined) values[name] = v
  }
  const counters = cleanCounters(given.counters)
  if (counters) values.counters = counters
  return Object.keys(values).length === 0 ? undefined : values
}

/**
 * Samples as they may cross the bus (pure): only entries with a canonical control path and at
 * least one usable value, the first of each control path, sorted by it, at most 256. Anything
 * else (a driver's garbage, a forged message) is dropped, never thrown.
 */
export function cleanDeviceSamples(raw: unknown): DeviceSample[] {
  if (!Array.isArray(raw)) return []
  const byPath = new Map<string, DeviceSample>()
  // A forged message may be long: look at no more than four times what can be kept.
  for (const entry of (raw as unknown[]).slice(0, 4 * DEVICE_SAMPLE_LIMITS.devices)) {
    if (entry === null || typeof entry !== 'object') continue
    const { controlPath, values } = entry as Record<string, unknown>
    if (typeof controlPath !== 'string' || !isCanonicalPciAddress(controlPath)) continue
    if (byPath.has(controlPath)) continue
    const clean = cleanDeviceValues(values)
    if (clean) byPath.set(controlPath, { controlPath, values: clean })
  }
  return [...byPath.values()]
    .sort((a, b) => (a.controlPath < b.controlPath ? -1 : a.controlPath > b.controlPath ? 1 : 0))
    .slice(0, DEVICE_SAMPLE_LIMITS.devices)
}
