/**
 * The database side of the composition roots, in its own module so that processes without a
 * database (`cyborg agent`) never load Kysely and the three drivers.
 */
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { optionError, type Config } from '../config/config.js'
import { openDatabase, parseConnectionUrl, type DatabaseHandle } from '../db/connection.js'
import { migrateToLatest } from '../db/migrate.js'
import { errorMessage } from './error-message.js'
import { errorCode } from './resources.js'

/** Opens `[database] connection`, creating the directory of an SQLite file first. */
export async function openConfiguredDatabase(config: Config): Promise<DatabaseHandle> {
  const url = config.database.connection
  const parsed = parseConnectionUrl(url)
  if (parsed.dialect === 'sqlite' && parsed.file !== undefined && parsed.file !== ':memory:') {
    try {
      mkdirSync(dirname(parsed.file), { recursive: true, mode: 0o750 })
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
    return await openDatabase(url, { poolSize: config.database.max_pool_size })
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
