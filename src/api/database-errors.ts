/**
 * A read that fails because of the database's state, not a bug: the schema is not there yet (an
 * API started before any conductor or `cyborg db sync` applied it), or the database cannot be
 * reached. Each engine's own words for them become an {@link UnavailableError} (503) that says
 * what to do, instead of a 500.
 */
import { UnavailableError } from '../domain/errors.js'

/** SQLite's message, PostgreSQL's SQLSTATE (undefined_table), MariaDB's code: a missing table. */
function missingTable(err: { code?: unknown; message?: unknown }): boolean {
  return (
    err.code === '42P01' ||
    err.code === 'ER_NO_SUCH_TABLE' ||
    (err.code === 'SQLITE_ERROR' && /^no such table: /.test(String(err.message)))
  )
}

/** Node's and the drivers' words for a database that does not answer. */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'PROTOCOL_CONNECTION_LOST',
  '57P01', // PostgreSQL: terminating connection due to administrator command
  '57P03', // PostgreSQL: the database system is starting up
])

/** `err` as the 503 it should be, or undefined when it is not the database's state. */
export function databaseUnavailable(err: unknown): UnavailableError | undefined {
  if (typeof err !== 'object' || err === null) return undefined
  const e = err as { code?: unknown; message?: unknown }
  if (missingTable(e))
    return new UnavailableError(
      `The database has no Cyborg schema yet (${String(e.message)}): run \`cyborg db sync\`, ` +
        'or start a conductor, which applies it',
    )
  if (typeof e.code === 'string' && UNREACHABLE.has(e.code))
    return new UnavailableError(`The database cannot be reached (${e.code}); try again later`)
  return undefined
}
