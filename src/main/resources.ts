/**
 * Builds the real adapters from the configuration: state directory, database, message bus, and
 * the option objects of the core. Only src/main constructs adapters (docs/ARCHITECTURE.md).
 */
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { optionError, type Config } from '../config/config.js'
import { openDatabase, parseConnectionUrl, type DatabaseHandle } from '../db/connection.js'
import { migrateToLatest } from '../db/migrate.js'
import type { MessageBus } from '../bus/bus.js'
import { createInProcessBus } from '../bus/in-process-bus.js'
import { DRIVER_ALIASES, driverNames } from '../drivers/index.js'
import type { CoreAgentOptions } from './core.js'
import type { ConductorOptions } from '../conductor/conductor.js'
import type { Logger } from '../domain/logger.js'
import { errorMessage } from './error-message.js'

/** Creates `[DEFAULT] state_path` (mode 0750) if missing. */
export function ensureStateDir(config: Config): string {
  const dir = config.DEFAULT.state_path
  try {
    mkdirSync(dir, { recursive: true, mode: 0o750 })
  } catch (err) {
    throw optionError(config, 'DEFAULT', 'state_path', `cannot create the directory: ${errorCode(err)}`)
  }
  return dir
}

/** Opens `[database] connection`, creating the directory of an SQLite file first. */
export async function openConfiguredDatabase(config: Config): Promise<DatabaseHandle> {
  const url = config.database.connection
  const parsed = parseConnectionUrl(url)
  if (parsed.dialect === 'sqlite' && parsed.file !== undefined && parsed.file !== ':memory:') {
    try {
      mkdirSync(dirname(parsed.file), { recursive: true, mode: 0o750 })
    } catch (err) {
      throw optionError(config, 'database', 'connection', `cannot create the directory of the SQLite file: ${errorCode(err)}`)
    }
  }
  try {
    return await openDatabase(url, { poolSize: config.database.max_pool_size })
  } catch (err) {
    throw optionError(config, 'database', 'connection', `cannot open the database: ${errorMessage(err)}`)
  }
}

/** Brings the schema up to date; returns the names of the migrations applied. */
export async function migrateDatabase(db: DatabaseHandle): Promise<string[]> {
  try {
    return (await migrateToLatest(db)).applied
  } catch (err) {
    throw new Error(`cannot migrate ${db.safeUrl}: ${errorMessage(err)}`, { cause: err })
  }
}

export interface BusOptions {
  /**
   * True for the separate api, conductor and agent processes: the in-process bus would leave them
   * unable to reach each other, so an empty transport_url is an error there.
   */
  shared: boolean
  log: Logger
}

/** The message bus `[DEFAULT] transport_url` asks for. */
export function createConfiguredBus(config: Config, options: BusOptions): MessageBus {
  const url = config.DEFAULT.transport_url
  if (url === '') {
    if (options.shared) {
      throw optionError(
        config,
        'DEFAULT',
        'transport_url',
        'separate api, conductor and agent processes need a shared message bus (RabbitMQ, arriving with the next milestone); run `cyborg up` to run them in one process',
      )
    }
    return createInProcessBus({
      onError: (err, context) => options.log.warn({ err, ...context }, 'message without a caller failed'),
    })
  }
  throw optionError(
    config,
    'DEFAULT',
    'transport_url',
    'the RabbitMQ transport is not yet supported; leave transport_url empty and run `cyborg up` for the in-process bus',
  )
}

export function conductorOptions(config: Config): ConductorOptions {
  return { saveIntervalMs: config.conductor.save_interval_ms, maxBatch: config.conductor.max_batch }
}

/** @throws ConfigError naming the file and line of `[agent] enabled_drivers` for an unknown driver */
export function agentOptions(config: Config): CoreAgentOptions {
  const known = driverNames()
  for (const name of config.agent.enabled_drivers) {
    if (!known.includes(name) && !Object.hasOwn(DRIVER_ALIASES, name)) {
      throw optionError(config, 'agent', 'enabled_drivers', `unknown driver "${name}"; possible values are: ${known.join(', ')}`)
    }
  }
  return {
    host: config.DEFAULT.host,
    periodicIntervalMs: config.DEFAULT.periodic_interval * 1000,
    autoActivate: config.agent.auto_activate,
    enabledDrivers: [...config.agent.enabled_drivers],
  }
}

export function errorCode(err: unknown): string {
  const e = err as NodeJS.ErrnoException
  return e?.code ?? errorMessage(err)
}
