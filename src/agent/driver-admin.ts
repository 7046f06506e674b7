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
import type { AgentRpc, DeviceActionResult, DriverAdminState } from '../rpc/agent-rpc.js'
import type { InventoryReportResult } from '../rpc/conductor-rpc.js'
import {
  AppError,
  ConflictError,
  ConfigError,
  DriverError,
  InvalidInputError,
  NotFoundError,
  UnavailableError,
} from '../domain/errors.js'
import { errorMessage } from '../domain/error-message.js'
import { controlPathAddress, type DiscoveredDevice } from '../domain/inventory/inventory.js'
import type { Logger } from '../domain/logger.js'
import {
  parseAdminDriver,
  parseControlPath,
  parseEnabled,
  parseImagePath,
  parseOptions,
  parseProgramAddress,
} from './driver-admin-input.js'

/** One driver's runtime settings, as the agent cache keeps them. */
export interface DriverSetting {
  enabled: boolean
  /** Overrides merged over the configured options. */
  options: Record<string, string>
}

/** Runtime settings by driver name. */
export type DriverSettings = Record<string, DriverSetting>

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

/** An error's code and message, for answers and wrapping. */
const failure = (err: unknown) => ({
  code: err instanceof AppError ? err.code : 'INTERNAL_ERROR',
  message: errorMessage(err),
})

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
  const optionsOf = (name: string, overrides: Record<string, string>) => ({
    ...baseOptions[name],
    ...overrides,
  })

  /** A new instance of `name` with `overrides`. @throws InvalidInputError when the factory refuses them */
  const build = (name: string, overrides: Record<string, string>): AcceleratorDriver => {
    const factory = Object.hasOwn(factories, name) ? factories[name] : undefined
    if (!factory || !driverDeps) {
      // How this agent was built, which no retry changes: a conflict (issue 27).
      throw new ConflictError(`driver ${name} cannot be rebuilt on this agent`, {
        code: 'DRIVER_NOT_REBUILDABLE',
      })
    }
    try {
      return factory(driverDeps, optionsOf(name, overrides))
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err
      throw new InvalidInputError(`driver ${name} refused the options: ${err.message}`, {
        code: err.code,
        details: { field: 'options', ...err.details },
        cause: err,
      })
    }
  }

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

  const resolve = (raw: string): string => {
    const name = Object.hasOwn(aliases, raw) ? aliases[raw]! : raw
    if (names.includes(name)) return name
    throw new NotFoundError(
      `driver ${raw} is not configured on this agent; known drivers: ${names.join(', ') || '(none)'}`,
      {
        code: 'DRIVER_NOT_FOUND',
        details: { driver: raw, known: names },
      },
    )
  }

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
      options: optionsOf(name, options),
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

    install: (req) =>
      serialized(async (): Promise<DeviceActionResult> => {
        const address = parseControlPath(req)
        const hit = await owner((d) => controlPathAddress(d.controlPath) === address)
        if (!hit) {
          throw new NotFoundError(
            `no enabled driver on this host reported a device at ${address}`,
            {
              code: 'DEVICE_NOT_ON_HOST',
              details: { address },
            },
          )
        }
        const { driver, device } = hit
        try {
          await driver.install?.(device)
        } catch (err) {
          throw new DriverError(
            `driver ${driver.name} could not install device ${address}: ${failure(err).message}`,
            {
              code: 'INSTALL_FAILED',
              details: { driver: driver.name, address, cause: failure(err).code },
              cause: err,
            },
          )
        }
        log.info(
          { driver: driver.name, address, step: driver.install ? 'install' : 'none' },
          'device installed',
        )
        return { ok: true, driver: driver.name, address }
      }),

    programFpga: (req) =>
      serialized(async (): Promise<DeviceActionResult> => {
        const address = parseProgramAddress(req)
        const imagePath = parseImagePath(req)
        const hit = await owner(
          (d) =>
            controlPathAddress(d.controlPath) === address ||
            d.deployables.some((dep) =>
              dep.attachHandles.some((h) => handleAddress(h.info) === address),
            ),
        )
        if (!hit) {
          throw new NotFoundError(`no enabled driver on this host owns PCI function ${address}`, {
            code: 'DEVICE_NOT_ON_HOST',
            details: { address },
          })
        }
        const { driver } = hit
        if (!driver.program) {
          throw new InvalidInputError(`driver ${driver.name} cannot program`, {
            code: 'PROGRAM_NOT_SUPPORTED',
            details: { driver: driver.name, address },
          })
        }
        await driver.program(hit.address, imagePath)
        log.info({ driver: driver.name, address: hit.address, imagePath }, 'FPGA programmed')
        return { ok: true, driver: driver.name, address: hit.address }
      }),

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

/** The `dddd:bb:dd.f` of a PCI attach handle's info, or undefined for another kind of handle. */
function handleAddress(info: Record<string, string>): string | undefined {
  const { domain, bus, device, function: fn } = info
  if (domain === undefined || bus === undefined || device === undefined || fn === undefined)
    return undefined
  return controlPathAddress({
    type: 'PCI',
    info: { domain, bus, device, function: fn },
  }).toLowerCase()
}
