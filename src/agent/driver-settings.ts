/**
 * Runtime driver settings of driver administration (driver-admin.ts): their shape as the agent
 * cache keeps them, the rebuild of a driver with option overrides through its factory, and the
 * resolution of a driver name (or Cyborg alias) to a configured driver.
 */
import type { AcceleratorDriver, DriverDeps, DriverRegistry } from '../drivers/driver.js'
import {
  AppError,
  ConfigError,
  ConflictError,
  InvalidInputError,
  NotFoundError,
} from '../domain/errors.js'
import { errorMessage } from '../domain/error-message.js'

/** One driver's runtime settings, as the agent cache keeps them. */
export interface DriverSetting {
  enabled: boolean
  /** Overrides merged over the configured options. */
  options: Record<string, string>
}

/** Runtime settings by driver name. */
export type DriverSettings = Record<string, DriverSetting>

/** An error's code and message, for answers and wrapping. */
export const failure = (err: unknown) => ({
  code: err instanceof AppError ? err.code : 'INTERNAL_ERROR',
  message: errorMessage(err),
})

export interface DriverBuildDeps {
  /** Factories by driver name. */
  factories: DriverRegistry['factories']
  /** The configured options, by driver name. */
  baseOptions: Readonly<Record<string, Readonly<Record<string, string>>>>
  /** What rebuilt drivers get; without it, options cannot be changed. */
  driverDeps: DriverDeps | undefined
}

/** The configured options of `name` with `overrides` merged over them. */
export const optionsOf = (
  deps: Pick<DriverBuildDeps, 'baseOptions'>,
  name: string,
  overrides: Record<string, string>,
) => ({ ...deps.baseOptions[name], ...overrides })

/**
 * A new instance of `name` with `overrides`.
 * @throws ConflictError DRIVER_NOT_REBUILDABLE without a factory or driver deps;
 *   InvalidInputError (field `options`) when the factory refuses them
 */
export function buildDriver(
  deps: DriverBuildDeps,
  name: string,
  overrides: Record<string, string>,
): AcceleratorDriver {
  const { factories, driverDeps } = deps
  const factory = Object.hasOwn(factories, name) ? factories[name] : undefined
  if (!factory || !driverDeps) {
    // How this agent was built, which no retry changes: a conflict (issue 27).
    throw new ConflictError(`driver ${name} cannot be rebuilt on this agent`, {
      code: 'DRIVER_NOT_REBUILDABLE',
    })
  }
  try {
    return factory(driverDeps, optionsOf(deps, name, overrides))
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    throw new InvalidInputError(`driver ${name} refused the options: ${err.message}`, {
      code: err.code,
      details: { field: 'options', ...err.details },
      cause: err,
    })
  }
}

/** The configured driver `raw` names (directly or by alias). @throws NotFoundError DRIVER_NOT_FOUND */
export function resolveDriver(
  names: readonly string[],
  aliases: DriverRegistry['aliases'],
  raw: string,
): string {
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
