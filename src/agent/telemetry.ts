/**
 * Usage telemetry (seed 000: "temporary data like the current usage of a given accelerator will be
 * broadcast via a message passing system and won't be stored"): one small message per period on
 * the fanout topic `cyborg.telemetry`. Drivers may offer cheap usage figures through the optional
 * {@link DriverStats} capability, and per-device samples through `deviceStats()`
 * (DeviceStatsCapability, domain/device-telemetry.ts), both detected at run time; the driver port
 * itself does not change.
 */
import type { AcceleratorDriver } from '../drivers/driver.js'
import type { MessageBus } from '../bus/bus.js'
import type { Logger } from '../domain/logger.js'
import type { Clock } from '../domain/time.js'
import {
  TELEMETRY_TOPIC,
  TELEMETRY_VERSION,
  type AgentTelemetry,
  type DriverTelemetry,
} from '../rpc/agent-rpc.js'
import {
  cleanDeviceSamples,
  type DeviceSample,
  type DeviceStatsCapability,
} from '../domain/device-telemetry.js'
import type { DriverRun } from './snapshot.js'

/** Usage figures a driver can give cheaply (utilization, memory used, mdevs in use, …). */
export type DriverStatsValues = Record<string, number | string | boolean>

/** An optional driver capability: a driver object with a `stats()` method offers telemetry. */
export interface DriverStats {
  stats(options?: { signal?: AbortSignal }): Promise<DriverStatsValues>
}

/** True when `driver` offers {@link DriverStats}. */
export function hasStats(driver: AcceleratorDriver): driver is AcceleratorDriver & DriverStats {
  return typeof (driver as Partial<DriverStats>).stats === 'function'
}

/**
 * Runs `call` with a signal that aborts at `timeoutMs` or with `signal`; resolves undefined when it
 * fails or runs out of time (the driver is told to stop through the signal).
 */
async function bounded<T>(
  call: (signal: AbortSignal) => Promise<T>,
  { timeoutMs, signal }: { timeoutMs: number; signal?: AbortSignal },
): Promise<T | undefined> {
  const controller = new AbortController()
  const onAbort = () => controller.abort(signal?.reason)
  signal?.addEventListener('abort', onAbort, { once: true })
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => {
      controller.abort(new Error('stats timed out'))
      resolve(undefined)
    }, timeoutMs)
  })
  try {
    return await Promise.race([call(controller.signal), deadline])
  } catch {
    return undefined
  } finally {
    clearTimeout(timer)
    signal?.removeEventListener('abort', onAbort)
  }
}

/**
 * The stats of `driver` within `timeoutMs`, or undefined when it has none, fails, times out or
 * answers with something that is not a flat record of scalars (telemetry must stay small).
 */
export async function collectStats(
  driver: AcceleratorDriver,
  options: { timeoutMs: number; signal?: AbortSignal },
): Promise<DriverStatsValues | undefined> {
  if (!hasStats(driver)) return undefined
  const values = await bounded((signal) => driver.stats({ signal }), options)
  if (values === null || typeof values !== 'object' || Array.isArray(values)) return undefined
  const flat: DriverStatsValues = {}
  for (const [key, value] of Object.entries(values).slice(0, 64)) {
    if (typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean')
      flat[key] = value
  }
  return flat
}

/** True when `driver` offers per-device samples ({@link DeviceStatsCapability}, domain/device-telemetry.ts). */
export function hasDeviceStats(
  driver: AcceleratorDriver,
): driver is AcceleratorDriver & DeviceStatsCapability {
  return typeof (driver as Partial<DeviceStatsCapability>).deviceStats === 'function'
}

/**
 * The per-device samples of `driver` within `timeoutMs`, cleaned (canonical control paths, finite
 * values, bounded); none when it has no `deviceStats()`, fails or times out.
 */
export async function collectDeviceStats(
  driver: AcceleratorDriver,
  options: { timeoutMs: number; signal?: AbortSignal },
): Promise<DeviceSample[]> {
  if (!hasDeviceStats(driver)) return []
  return cleanDeviceSamples(await bounded((signal) => driver.deviceStats({ signal }), options))
}

/**
 * Builds the telemetry message of one period from the last discovery runs, the stats gathered,
 * and the device samples with the agent's period (version 2: `devices` and `periodMs` added).
 */
export function buildTelemetry(
  host: string,
  time: Date,
  runs: readonly DriverRun[],
  stats: ReadonlyMap<string, DriverStatsValues>,
  extra: { devices?: readonly DeviceSample[]; periodMs?: number } = {},
): AgentTelemetry {
  const drivers: DriverTelemetry[] = runs.map((run) => {
    const values = stats.get(run.driver)
    return {
      name: run.driver,
      ok: run.ok,
      deviceCount: run.deviceCount,
      durationMs: run.durationMs,
      ...(values ? { stats: values } : {}),
    }
  })
  return {
    version: TELEMETRY_VERSION,
    host,
    time: time.toISOString(),
    deviceCount: runs.reduce((n, r) => n + r.deviceCount, 0),
    drivers,
    ...(extra.periodMs === undefined ? {} : { periodMs: extra.periodMs }),
    // Several drivers' samples together: one per control path, sorted, at most 256.
    devices: cleanDeviceSamples(extra.devices ?? []),
  }
}

export interface TelemetryPublishDeps {
  bus: MessageBus | undefined
  host: string
  clock: Clock
  /** The enabled drivers, asked for their stats. */
  drivers: readonly AcceleratorDriver[]
  /** The runs of the last discovery; nothing is published before the first. */
  runs: readonly DriverRun[] | undefined
  /** Time limit of each driver's stats. */
  statsTimeoutMs: number
  /** Aborted when the agent stops. */
  signal: AbortSignal
  /** The agent's period, sent with the message. */
  periodMs: number
  log: Logger
}

/** Gathers every enabled driver's stats and device samples and publishes one period's message; never throws. */
export async function publishTelemetry(deps: TelemetryPublishDeps): Promise<void> {
  const { bus, runs } = deps
  if (!bus || !runs) return
  const stats = new Map<string, DriverStatsValues>()
  const devices: DeviceSample[] = []
  await Promise.all(
    deps.drivers.map(async (driver) => {
      const bounds = { timeoutMs: deps.statsTimeoutMs, signal: deps.signal }
      const [values, samples] = await Promise.all([
        collectStats(driver, bounds),
        collectDeviceStats(driver, bounds),
      ])
      if (values) stats.set(driver.name, values)
      devices.push(...samples)
    }),
  )
  const extra = { devices, periodMs: deps.periodMs }
  try {
    await bus.publish(
      TELEMETRY_TOPIC,
      buildTelemetry(deps.host, deps.clock.now(), runs, stats, extra),
    )
  } catch (err) {
    deps.log.debug({ err }, 'telemetry not published')
  }
}
