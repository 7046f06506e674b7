/**
 * Recognizes constraint violations of the three drivers (better-sqlite3, pg, mysql2) and turns
 * them into domain errors, so that callers never see a driver's error shape.
 */
import { ConflictError, NotFoundError } from '../../domain/errors.js'

interface DriverError {
  code?: unknown
  errno?: unknown
  constraint?: unknown
  detail?: unknown
  message?: unknown
}

const asDriverError = (err: unknown): DriverError =>
  err !== null && typeof err === 'object' ? (err as DriverError) : {}

/** True for a unique (or primary key) violation on any of the three databases. */
export function isUniqueViolation(err: unknown): boolean {
  const { code, errno } = asDriverError(err)
  return (
    code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    code === 'SQLITE_CONSTRAINT_PRIMARYKEY' ||
    code === '23505' ||
    errno === 1062
  )
}

/**
 * True when the database gave up on a statement because of another transaction, and running the
 * same work again in a new transaction may well succeed: a deadlock (PostgreSQL 40P01, MySQL 1213),
 * a serialization failure (40001), a lock timeout (PostgreSQL 55P03, MySQL 1205), SQLite busy.
 * On a Galera cluster a write that conflicts with one committed through another node fails
 * certification, at COMMIT or at its next statement, and is reported as a deadlock (1213): the
 * transaction rolled back everywhere. A node not ready for clients (joining, or cut off from the
 * cluster's primary component) answers 1047 'WSREP has not yet prepared node for application use'
 * without running the statement; once it is Synced again, or on a connection to another node
 * (mysql-pool.ts), the work can run.
 */
export function isTransientLockError(err: unknown): boolean {
  return transientCause(err) !== undefined
}

/** Why a transient error may pass (the label of `cyborg_db_write_retries_total`). */
export type TransientCause =
  'deadlock' | 'serialization' | 'lock_timeout' | 'not_ready' | 'busy' | 'connection_lost'

/**
 * The cause of an error `isTransientLockError` accepts, else undefined. On Galera, `deadlock`
 * counts the certification failures (1213) with the ordinary deadlocks: the server tells them apart
 * only in its message.
 */
export function transientCause(err: unknown): TransientCause | undefined {
  const { code, errno } = asDriverError(err)
  if (code === '40P01' || errno === 1213) return 'deadlock'
  if (code === '40001') return 'serialization'
  if (code === '55P03' || errno === 1205) return 'lock_timeout'
  if (errno === 1047) return 'not_ready'
  if (code === 'SQLITE_BUSY') return 'busy'
  return undefined
}

/**
 * True for a foreign-key violation on any of the three databases, in either direction:
 * a child naming a missing parent (MySQL 1452, 1216) or a parent still referenced (MySQL 1451, 1217).
 */
export function isForeignKeyViolation(err: unknown): boolean {
  const { code, errno } = asDriverError(err)
  return (
    code === 'SQLITE_CONSTRAINT_FOREIGNKEY' ||
    code === '23503' ||
    errno === 1451 ||
    errno === 1452 ||
    errno === 1216 ||
    errno === 1217
  )
}

/**
 * The column and constraint names that a constraint error mentions, best effort:
 * SQLite `UNIQUE constraint failed: t.a, t.b`, PostgreSQL `constraint` + `Key (a, b)=(…)`,
 * MySQL/MariaDB `Duplicate entry '…' for key 't.name'`.
 */
export function violatedNames(err: unknown): string[] {
  const { constraint, detail, message } = asDriverError(err)
  const names: string[] = []
  const add = (s: string) => {
    const trimmed = s.trim().replace(/^["`]|["`]$/g, '')
    if (!trimmed) return
    names.push(trimmed)
    const dot = trimmed.lastIndexOf('.')
    if (dot >= 0) names.push(trimmed.slice(dot + 1))
  }
  if (typeof constraint === 'string') add(constraint)
  if (typeof detail === 'string') {
    const cols = /Key \(([^)]*)\)=/.exec(detail)?.[1]
    cols?.split(',').forEach(add)
  }
  if (typeof message === 'string') {
    const sqlite = /constraint failed: (.*)$/.exec(message)?.[1]
    sqlite?.split(',').forEach(add)
    const mysql = /for key '([^']+)'/.exec(message)?.[1]
    if (mysql) add(mysql)
  }
  return names
}

/** How to translate a constraint error of one write. */
export interface DbErrorMapping {
  /** What was written, for messages, e.g. `'attribute'`. */
  entity: string
  /**
   * The field to name on a unique violation: one field, or a map from column/constraint name to
   * field (the first name found in the error wins; otherwise the map's first value).
   */
  unique?: string | Record<string, string>
  /** On a foreign-key violation during an insert or update: the field naming the missing parent. */
  missingParent?: string
  /** On a foreign-key violation during a delete: the row is still referenced. */
  referenced?: boolean
  /** Stable codes for the resulting errors. */
  codes?: { conflict?: string; notFound?: string }
}

/**
 * Maps a unique violation to ConflictError and a foreign-key violation to NotFoundError (missing
 * parent) or ConflictError (still referenced), each with `details.field` and the driver error as
 * `cause`. Anything else comes back unchanged. Use as `throw translateDbError(err, {...})`.
 */
export function translateDbError(err: unknown, mapping: DbErrorMapping): unknown {
  const { entity, unique, missingParent, referenced, codes = {} } = mapping
  if (unique !== undefined && isUniqueViolation(err)) {
    const field = typeof unique === 'string' ? unique : pickField(err, unique)
    return new ConflictError(`${entity} with this ${field} already exists`, {
      code: codes.conflict ?? 'CONFLICT',
      details: { field },
      cause: err,
    })
  }
  if (isForeignKeyViolation(err)) {
    if (missingParent !== undefined) {
      return new NotFoundError(`${entity}: ${missingParent} refers to nothing`, {
        code: codes.notFound ?? 'NOT_FOUND',
        details: { field: missingParent },
        cause: err,
      })
    }
    if (referenced) {
      return new ConflictError(`${entity} is still in use`, {
        code: codes.conflict ?? 'CONFLICT',
        details: { field: 'id' },
        cause: err,
      })
    }
  }
  return err
}

function pickField(err: unknown, byName: Record<string, string>): string {
  for (const name of violatedNames(err)) {
    const field = byName[name]
    if (field !== undefined) return field
  }
  return Object.values(byName)[0] ?? 'id'
}
