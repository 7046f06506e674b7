/**
 * One discovery pass: run every driver (each with a time limit), gather their devices, and build
 * the snapshot the conductor receives. Driver failures are collected per driver, not thrown.
 */
import type { AcceleratorDriver } from '../drivers/driver.js'
import { AppError, DriverError, TimeoutError } from '../domain/errors.js'
import {
  canonicalJson,
  type DiscoveredDevice,
  type InventorySnapshot,
} from '../domain/inventory/inventory.js'
import { inventoryHash } from '../rpc/inventory-hash.js'

/** A driver whose discovery failed, and why. */
export interface DriverFailure {
  driver: string
  error: AppError
}

/** How one driver's discovery went (for the cache's driver states and telemetry). */
export interface DriverRun {
  driver: string
  ok: boolean
  deviceCount: number
  durationMs: number
}

/** What all drivers found: their devices, the drivers that failed, and how each run went (in driver order). */
export interface DiscoveryResult {
  devices: DiscoveredDevice[]
  failures: DriverFailure[]
  runs: DriverRun[]
  /** The devices of each driver that succeeded, by driver name (to find a device's driver). */
  byDriver: Map<string, DiscoveredDevice[]>
}

/**
 * Runs every driver's discover() concurrently. A driver that throws, or takes longer than
 * `timeoutMs` (its signal is then aborted), contributes a failure instead of devices.
 */
export async function discoverAll(
  drivers: readonly AcceleratorDriver[],
  { signal, timeoutMs }: { signal: AbortSignal; timeoutMs: number },
): Promise<DiscoveryResult> {
  const settled = await Promise.all(
    drivers.map(async (driver) => {
      const started = performance.now()
      const outcome = await discoverOne(driver, signal, timeoutMs)
      return { outcome, durationMs: Math.round((performance.now() - started) * 1000) / 1000 }
    }),
  )
  const result: DiscoveryResult = { devices: [], failures: [], runs: [], byDriver: new Map() }
  settled.forEach(({ outcome, durationMs }, i) => {
    const driver = drivers[i]!.name
    const ok = Array.isArray(outcome)
    if (ok) {
      result.devices.push(...outcome)
      result.byDriver.set(driver, outcome)
    } else result.failures.push({ driver, error: outcome })
    result.runs.push({ driver, ok, deviceCount: ok ? outcome.length : 0, durationMs })
  })
  return result
}

async function discoverOne(
  driver: AcceleratorDriver,
  parent: AbortSignal,
  timeoutMs: number,
): Promise<DiscoveredDevice[] | AppError> {
  const controller = new AbortController()
  const onAbort = () => controller.abort(parent.reason)
  parent.addEventListener('abort', onAbort, { once: true })
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new TimeoutError(
        `driver ${driver.name} did not finish discovery within ${timeoutMs} ms`,
      )
      controller.abort(err)
      reject(err)
    }, timeoutMs)
  })
  try {
    const devices = await Promise.race([driver.discover({ signal: controller.signal }), deadline])
    if (!Array.isArray(devices))
      throw new DriverError(`driver ${driver.name} returned no device list`)
    return devices
  } catch (err) {
    return err instanceof AppError
      ? err
      : new DriverError(`driver ${driver.name} failed: ${(err as Error)?.message ?? String(err)}`, {
          cause: err,
        })
  } finally {
    clearTimeout(timer)
    parent.removeEventListener('abort', onAbort)
  }
}

/**
 * A copy of `devices` in a canonical order (devices by control path, deployables by name,
 * attributes by key, handles by info), so that the hash does not depend on the order in which
 * drivers or the file system list things.
 */
export function normalizeDevices(devices: readonly DiscoveredDevice[]): DiscoveredDevice[] {
  const byKey =
    <T>(key: (item: T) => string) =>
    (a: T, b: T) =>
      key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0
  return devices
    .map((device) => ({
      ...device,
      deployables: device.deployables
        .map((d) => ({
          ...d,
          attributes: [...d.attributes].sort(byKey((a) => a.key)),
          attachHandles: [...d.attachHandles].sort(byKey((h) => canonicalJson([h.info, h.type]))),
        }))
        .sort(byKey((d) => d.name)),
    }))
    .sort(byKey((d) => canonicalJson(d.controlPath)))
}

/** The snapshot of `host`: normalized devices and their content hash. */
export function buildSnapshot(
  host: string,
  devices: readonly DiscoveredDevice[],
): InventorySnapshot {
  const normalized = normalizeDevices(devices)
  return { host, hash: inventoryHash(normalized), devices: normalized }
}
