/**
 * Usage telemetry (seed 000: "temporary data like the current usage of a given accelerator will be
 * broadcast via a message passing system and won't be stored"): one small message per period on
 * the fanout topic `cyborg.telemetry`. Drivers may offer cheap usage figures through the optional
 * {@link DriverStats} capability, detected at run time; the driver port itself does not change.
 */
import type { AcceleratorDriver } from '../drivers/driver.js'
import type { AgentTelemetry, DriverTelemetry } from '../rpc/agent-rpc.js'
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
 * The stats of `driver` within `timeoutMs`, or undefined when it has none, fails, times out or
 * answers with something that is not a flat record of scalars (telemetry must stay small).
 */
export async function collectStats(
  driver: AcceleratorDriver,
  { timeoutMs, signal }: { timeoutMs: number; signal?: AbortSignal },
): Promise<DriverStatsValues | undefined> {
  if (!hasStats(driver)) return undefined
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
    const values = await Promise.race([driver.stats({ signal: controller.signal }), deadline])
    if (values === null || typeof values !== 'object' || Array.isArray(values)) return undefined
    const flat: DriverStatsValues = {}
    for (const [key, value] of Object.entries(values).slice(0, 64)) {
      if (typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean')
        flat[key] = value
    }
    return flat
  } catch {
    return undefined
  } finally {
    clearTimeout(timer)
    signal?.removeEventListener('abort', onAbort)
  }
}

/** Builds the telemetry message of one period from the last discovery runs and the stats gathered. */
export function buildTelemetry(
  host: string,
  time: Date,
  runs: readonly DriverRun[],
  stats: ReadonlyMap<string, DriverStatsValues>,
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
    version: 1,
    host,
    time: time.toISOString(),
    deviceCount: runs.reduce((n, r) => n + r.deviceCount, 0),
    drivers,
  }
}
