/**
 * The latest device telemetry, in memory only (pure; seed 000: usage is broadcast, never stored).
 * The conductor keeps one for its gauges and the API one for `GET /v1/telemetry`, each fed from
 * the agents' messages on `cyborg.telemetry`.
 *
 * - Latest only: one sample per device (host + control path), with the time it was received.
 * - A host's message replaces that host's samples wholesale: a device missing from it is dropped.
 * - A host silent for `stalePeriods` of its own telemetry periods (the period its messages state,
 *   else `defaultPeriodMs`) is dropped with all its samples.
 *
 * Times are the receiver's (`receivedAt`, ms since the epoch): agents' clocks may be skewed.
 */
import type { DeviceSample, DeviceValues } from './device-telemetry.js'
import type { GaugeName, Labels } from './metrics.js'

/** One device's latest sample, as kept. */
export interface StoredSample {
  host: string
  controlPath: string
  values: DeviceValues
  /** When the receiver got the message (ms since the epoch). */
  receivedAt: number
  /** The agent's own time of the message (ISO-8601), when it gave one. */
  time?: string
}

export interface TelemetryStoreOptions {
  /** A host silent for this many of its periods is dropped. @default 3 */
  stalePeriods?: number
  /** The period of a host whose messages do not state one (an older agent). @default 60000 */
  defaultPeriodMs?: number
  /** At most this many hosts are kept; a new host beyond it is ignored. @default 100000 */
  maxHosts?: number
}

/** What one message says, for {@link TelemetryStore.put}. */
export interface TelemetryReceipt {
  receivedAt: number
  /** The agent's telemetry period in ms, when the message states it. */
  periodMs?: number
  /** The agent's time of the message. */
  time?: string
}

export interface TelemetryStore {
  /** Replaces `host`'s samples with `samples` (none: the host is forgotten). */
  put(host: string, samples: readonly DeviceSample[], receipt: TelemetryReceipt): void
  /** Drops the hosts silent for too long at `now`; returns their names. */
  prune(now: number): string[]
  /** The current samples at `now` (stale hosts pruned first), of one host or all, by host then control path. */
  samples(now: number, host?: string): StoredSample[]
  /** The hosts with samples, sorted. */
  hosts(): string[]
  /** Whether `host` has samples (stale or not). */
  has(host: string): boolean
  /** Forgets everything. */
  clear(): void
}

interface HostEntry {
  receivedAt: number
  periodMs: number
  time?: string
  samples: readonly DeviceSample[]
}

/** Longest period a message may claim (a day): a bogus one must not keep samples forever. */
const MAX_PERIOD_MS = 86_400_000

export function createTelemetryStore(options: TelemetryStoreOptions = {}): TelemetryStore {
  const { stalePeriods = 3, defaultPeriodMs = 60_000, maxHosts = 100_000 } = options
  const hosts = new Map<string, HostEntry>()
  const period = (given: number | undefined): number =>
    given !== undefined && Number.isFinite(given) && given > 0
      ? Math.min(given, MAX_PERIOD_MS)
      : defaultPeriodMs
  const prune = (now: number): string[] => {
    const dropped: string[] = []
    for (const [host, e] of hosts) {
      if (now - e.receivedAt > stalePeriods * e.periodMs) {
        hosts.delete(host)
        dropped.push(host)
      }
    }
    return dropped
  }
  const stored = (host: string, e: HostEntry): StoredSample[] =>
    e.samples.map((s) => ({
      host,
      controlPath: s.controlPath,
      values: s.values,
      receivedAt: e.receivedAt,
      ...(e.time === undefined ? {} : { time: e.time }),
    }))
  return {
    put(host, samples, receipt) {
      if (samples.length === 0) {
        hosts.delete(host)
        return
      }
      if (!hosts.has(host) && hosts.size >= maxHosts) return
      hosts.set(host, {
        receivedAt: receipt.receivedAt,
        periodMs: period(receipt.periodMs),
        ...(receipt.time === undefined ? {} : { time: receipt.time }),
        samples: [...samples],
      })
    },
    prune,
    samples(now, host) {
      prune(now)
      if (host !== undefined) {
        const e = hosts.get(host)
        return e ? stored(host, e) : []
      }
      return [...hosts.keys()].sort().flatMap((h) => stored(h, hosts.get(h)!))
    },
    hosts: () => [...hosts.keys()].sort(),
    has: (host) => hosts.has(host),
    clear: () => hosts.clear(),
  }
}

/** What a device's gauges are labelled with besides its host: its uuid, type and vendor. */
export interface DeviceLabels {
  device: string
  type: string
  vendor: string
}

/** The per-device gauges of the metrics catalog, one per sample value (ECC: one gauge, by kind). */
export const DEVICE_GAUGES = {
  utilization_ratio: 'cyborg_device_utilization_ratio',
  memory_used_bytes: 'cyborg_device_memory_used_bytes',
  memory_total_bytes: 'cyborg_device_memory_total_bytes',
  temperature_celsius: 'cyborg_device_temperature_celsius',
  power_watts: 'cyborg_device_power_watts',
  ecc_correctable: 'cyborg_device_ecc_errors',
  ecc_uncorrectable: 'cyborg_device_ecc_errors',
  wear_ratio: 'cyborg_device_wear_ratio',
} as const satisfies Record<Exclude<keyof DeviceValues, 'counters'>, GaugeName>

/** Every gauge the samples feed, counters included. */
export const DEVICE_GAUGE_NAMES: readonly GaugeName[] = [
  ...new Set<GaugeName>([...Object.values(DEVICE_GAUGES), 'cyborg_device_counter']),
]

/**
 * The series of every per-device gauge (pure), for `Metrics.replace`: every gauge is listed, so a
 * device or host gone from `samples` loses its series. A sample whose device `labelsOf` does not
 * know (not in the database, or not yet read) gives none.
 */
export function deviceGaugeSeries(
  samples: readonly StoredSample[],
  labelsOf: (host: string, controlPath: string) => DeviceLabels | undefined,
): { name: GaugeName; series: { labels: Labels; value: number }[] }[] {
  const out = new Map<GaugeName, { labels: Labels; value: number }[]>(
    DEVICE_GAUGE_NAMES.map((name) => [name, []]),
  )
  for (const s of samples) {
    const device = labelsOf(s.host, s.controlPath)
    if (!device) continue
    const base = { host: s.host, ...device }
    for (const [key, name] of Object.entries(DEVICE_GAUGES) as [
      keyof typeof DEVICE_GAUGES,
      GaugeName,
    ][]) {
      const value = s.values[key]
      if (value === undefined) continue
      const labels =
        name === 'cyborg_device_ecc_errors'
          ? { ...base, kind: key === 'ecc_correctable' ? 'correctable' : 'uncorrectable' }
          : base
      out.get(name)!.push({ labels, value })
    }
    for (const [counter, value] of Object.entries(s.values.counters ?? {}))
      out.get('cyborg_device_counter')!.push({ labels: { ...base, name: counter }, value })
  }
  return [...out].map(([name, series]) => ({ name, series }))
}
