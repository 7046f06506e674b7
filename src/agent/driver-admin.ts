/**
 * Runtime driver management and the device lifecycle actions of AgentRpc 1.2:
 *
 * - `install({ controlPath })`: the install step of the driver that reported the device (seed 000
 *   lifecycle: the conductor calls it when an operator marks a device `ready`);
 * - `programFpga({ address, imagePath })`: the FPGA driver's `program`;
 * - `setDriverEnabled` / `updateDriverOptions`: a disabled driver is skipped by discovery; new
 *   options rebuild the driver through its factory (the registry the composition root passed in).
 *
 * The settings (enabled, option overrides) are saved in the agent cache before they take effect,
 * so they survive a restart; `ready()` loads them before the first discovery. Actions run one at a
 * time. Devices are looked up in what each enabled driver found in its last successful discovery.
 */
import type { AcceleratorDriver, DriverDeps, DriverRegistry } from '../drivers/driver.js'
import type { AgentRpc, DriverAdminState } from '../rpc/agent-rpc.js'
import type { InventoryReportResult } from '../rpc/conductor-rpc.js'
import { UnavailableError } from '../domain/errors.js'
import { controlPathAddress, type DiscoveredDevice } from '../domain/inventory/inventory.js'
import type { Logger } from '../domain/logger.js'
import { parseAdminDriver, parseEnabled, parseOptions } from './driver-admin-input.js'
import { installDevice, programFpgaDevice } from './device-actions.js'
import {
  buildDriver,
  failure,
  optionsOf,
  resolveDriver,
  type DriverSetting,
  type DriverSettings,
} from './driver-settings.js'

export type { DriverSetting, DriverSettings } from './driver-settings.js'

export interface DriverAdminDeps {
  /** The configured drivers, in order. */
  drivers: readonly AcceleratorDriver[]
  /** Factories by driver name, to rebuild a driver with new options, and the accepted aliases of names. */
  registry: DriverRegistry
  /** The configured options, by driver name. */
  baseOptions: Readonly<Record<string, Readonly<Record<string, string>>>>
  /** What rebuilt drivers get; without it, options cannot be changed. */
  driverDeps: DriverDeps | undefined
  store: {
    load(): Promise<DriverSettings | undefined>
    save(settings: DriverSettings): Promise<void>
  }
  /** Discovers and reports now (the agent's serialized discovery). */
  rediscover(): Promise<InventoryReportResult>
  log: Logger
}

export type DriverAdminRpc = Pick<
  AgentRpc,
  'install' | 'programFpga' | 'setDriverEnabled' | 'updateDriverOptions'
>

export interface DriverAdmin extends DriverAdminRpc {
  /** Loads the saved settings once (rebuilding overridden drivers); every call waits for that load. */
  ready(): Promise<void>
  /** The enabled drivers, in configured order. */
  enabled(): AcceleratorDriver[]
  /** What each driver that succeeded found in a discovery. */
  recordDiscovery(found: ReadonlyMap<string, readonly DiscoveredDevice[]>): void
  /** The enabled driver whose last discovery has a device matching `match`, and that device. */
  owner(
    match: (d: DiscoveredDevice) => boolean,
  ): Promise<{ driver: AcceleratorDriver; device: DiscoveredDevice } | undefined>
}

export function createDriverAdmin(deps: DriverAdminDeps): DriverAdmin {
  const { baseOptions, driverDeps, store, log } = deps
  const { factories, aliases } = deps.registry
  const names = deps.drivers.map((d) => d.name)
  const instances = new Map(deps.drivers.map((d) => [d.name, d]))
  let settings: DriverSettings = {}
  const found = new Map<string, readonly DiscoveredDevice[]>()
  let loading: Promise<void> | undefined
  let queue: Promise<unknown> = Promise.resolve()

  const serialized = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = queue.then(async () => {
      await ready()
      return fn()
    })
    queue = run.catch(() => {})
    return run
  }

  const setting = (name: string): DriverSetting => settings[name] ?? { enabled: true, options: {} }
  const build = (name: string, overrides: Record<string, string>): AcceleratorDriver =>
    buildDriver({ factories, baseOptions, driverDeps }, name, overrides)

  const ready = (): Promise<void> =>
    (loading ??= (async () => {
      let saved: DriverSettings | undefined
      try {
        saved = await store.load()
      } catch (err) {
        log.warn({ err }, 'driver settings could not be read; using the configuration')
      }
      for (const [name, s] of Object.entries(saved ?? {})) {
        if (!names.includes(name)) continue
        settings[name] = s
        if (Object.keys(s.options).length === 0) continue
        try {
          instances.set(name, build(name, s.options))
        } catch (err) {
          log.warn(
            { err, driver: name },
            'saved driver options no longer apply; using the configured ones',
          )
        }
      }
    })())

  const resolve = (raw: string): string => resolveDriver(names, aliases, raw)

  const persist = async (next: DriverSettings) => {
    try {
      await store.save(next)
    } catch (err) {
      throw new UnavailableError(
        `driver settings could not be saved in the agent cache: ${failure(err).message}`,
        {
          code: 'AGENT_CACHE_WRITE_FAILED',
          cause: err,
        },
      )
    }
    settings = next
  }

  const answer = async (name: string): Promise<DriverAdminState> => {
    const report = await deps.rediscover().then(
      (result) => ({ ok: true as const, result }),
      (err: unknown) => ({ ok: false as const, ...failure(err) }),
    )
    const { enabled, options } = setting(name)
    return {
      driver: name,
      enabled,
      options: optionsOf(deps, name, options),
      overrides: { ...options },
      report,
    }
  }

  const enabled = () => names.filter((n) => setting(n).enabled).map((n) => instances.get(n)!)

  /** The enabled driver that found a device matching `match`, and that device. */
  const owner = async (match: (d: DiscoveredDevice) => boolean) => {
    if (found.size === 0)
      await deps.rediscover().catch((err: unknown) => log.debug({ err }, 'rediscovery failed'))
    for (const driver of enabled()) {
      const device = found.get(driver.name)?.find(match)
      if (device) return { driver, device, address: controlPathAddress(device.controlPath) }
    }
    return undefined
  }

  return {
    ready,
    enabled,
    owner: async (match) => {
      await ready()
      return owner(match)
    },
    recordDiscovery(result) {
      for (const [name, devices] of result) found.set(name, devices)
    },

    install: (req) => serialized(() => installDevice({ owner, log }, req)),
    programFpga: (req) => serialized(() => programFpgaDevice({ owner, log }, req)),

    setDriverEnabled: (req) =>
      serialized(async () => {
        const name = resolve(parseAdminDriver(req))
        const value = parseEnabled(req)
        await persist({ ...settings, [name]: { ...setting(name), enabled: value } })
        if (!value) found.delete(name)
        log.info({ driver: name, enabled: value }, value ? 'driver enabled' : 'driver disabled')
        return answer(name)
      }),

    updateDriverOptions: (req) =>
      serialized(async () => {
        const name = resolve(parseAdminDriver(req))
        const overrides = { ...setting(name).options, ...parseOptions(req) }
        const instance = build(name, overrides)
        await persist({ ...settings, [name]: { ...setting(name), options: overrides } })
        instances.set(name, instance)
        found.delete(name)
        log.info(
          { driver: name, overrides: Object.keys(overrides) },
          'driver options updated; driver rebuilt',
        )
        return answer(name)
      }),
  }
}
