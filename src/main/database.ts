/**
 * The database side of the composition roots, in its own module so that processes without a
 * database (`cyborg agent`) never load Kysely and the three drivers.
 */
import { existsSync, mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { optionError, type Config } from '../config/config.js'
import { openDatabase, parseConnectionUrl, type DatabaseHandle } from '../db/core/connection.js'
import { migrateToLatest, migrationStatus } from '../db/core/migrate.js'
import { ConflictError } from '../domain/errors.js'
import { errorMessage } from '../domain/error-message.js'
import { errorCode } from './resources.js'

/**
 * Opens `[database] connection`, creating the directory of an SQLite file first; `readOnly` (the
 * commands that only read) creates nothing: a missing SQLite file is a ConfigError naming it.
 */
export async function openConfiguredDatabase(
  config: Config,
  options: { readOnly?: boolean } = {},
): Promise<DatabaseHandle> {
  const url = config.database.connection
  const readOnly = options.readOnly === true
  const parsed = parseConnectionUrl(url)
  const file = parsed.dialect === 'sqlite' && parsed.file !== ':memory:' ? parsed.file : undefined
  if (readOnly && file !== undefined && !existsSync(file)) {
    throw optionError(
      config,
      'database',
      'connection',
      `the SQLite file ${file} does not exist; create it with cyborg db upgrade (or point [database] connection at the database)`,
    )
  }
  if (!readOnly && file !== undefined) {
    try {
      mkdirSync(dirname(file), { recursive: true, mode: 0o750 })
    } catch (err) {
      throw optionError(
        config,
        'database',
        'connection',
        `cannot create the directory of the SQLite file: ${errorCode(err)}`,
      )
    }
  }
  try {
    return await openDatabase(url, { poolSize: config.database.max_pool_size, readOnly })
  } catch (err) {
    throw optionError(
      config,
      'database',
      'connection',
      `cannot open the database: ${errorMessage(err)}`,
    )
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

/**
 * For the commands that read Cyborg's tables: refuses a database without Cyborg's schema, or with
 * migrations pending, naming it and `cyborg db upgrade`, instead of failing on a missing table.
 * @throws ConflictError (`SCHEMA_NOT_CURRENT`)
 */
export async function requireCurrentSchema(db: DatabaseHandle, command: string): Promise<void> {
  const status = await migrationStatus(db)
  const latest = status.all.at(-1)
  if (status.unknown.length > 0)
    throw new ConflictError(
      `${command} needs the schema at ${latest}; ${db.safeUrl} is at ${status.unknown.at(-1)}, newer than this Cyborg: use the Cyborg that upgraded it`,
      { code: 'SCHEMA_NOT_CURRENT' },
    )
  if (status.current === null)
    throw new ConflictError(
      `${db.safeUrl} holds no Cyborg schema (not initialised): run cyborg db upgrade first`,
      { code: 'SCHEMA_NOT_CURRENT' },
    )
  if (status.pending.length > 0)
    throw new ConflictError(
      `${command} needs the schema at ${latest}; it is at ${status.current}: run cyborg db upgrade first`,
      { code: 'SCHEMA_NOT_CURRENT' },
    )
}
