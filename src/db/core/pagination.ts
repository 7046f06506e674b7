/**
 * Keyset pagination shared by the list queries: sort by any whitelisted column, tie-break on id,
 * and continue after a marker row (named by uuid), as OpenStack's `marker`/`limit`/`sort_key` do.
 */
import { sql, type SelectQueryBuilder } from 'kysely'
import type { ReadDb } from './connection.js'
import { InvalidInputError, NotFoundError } from '../../domain/errors.js'
import type { Database } from './schema.js'

export type SortDir = 'asc' | 'desc'

/** The paging part of a list filter. */
export interface PageOptions<K extends string> {
  /** At most this many rows. */
  limit?: number
  /** Uuid of the last row of the previous page; rows after it (in this order) come back. */
  marker?: string
  /** @default 'id' */
  sortKey?: K
  /** @default 'asc' */
  sortDir?: SortDir
  /**
   * A list held to one project (a non-admin's): the marker must be a row of that project (its
   * `project_id`); another project's row is as unknown, so a list never confirms that it exists.
   */
  markerProject?: string
}

/** How one table pages. */
export interface PageSpec<K extends string> {
  table: keyof Database & string
  keys: readonly K[]
  /** Sort keys that may be NULL; they sort as '' (all are text columns). */
  nullable: readonly K[]
  /** Code of the NotFoundError for an unknown marker, e.g. `DEVICE_NOT_FOUND`. */
  notFoundCode: string
}

/** Adds ORDER BY, the marker condition and LIMIT to `qb` (a select from `spec.table`). */
export async function paginate<TB extends keyof Database, O, K extends string>(
  db: ReadDb,
  qb: SelectQueryBuilder<Database, TB, O>,
  spec: PageSpec<K>,
  options: PageOptions<K>,
): Promise<SelectQueryBuilder<Database, TB, O>> {
  const { limit, marker, sortKey = 'id' as K, sortDir = 'asc', markerProject } = options
  if (!spec.keys.includes(sortKey)) {
    throw new InvalidInputError(
      `invalid sort key ${sortKey}; valid keys: ${spec.keys.join(', ')}`,
      {
        details: { field: 'sort_key', allowed: [...spec.keys] },
      },
    )
  }
  if (sortDir !== 'asc' && sortDir !== 'desc') {
    throw new InvalidInputError(`invalid sort direction ${String(sortDir)}; valid: asc, desc`, {
      details: { field: 'sort_dir' },
    })
  }
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1)) {
    throw new InvalidInputError(`invalid limit ${limit}: expected a positive integer`, {
      details: { field: 'limit' },
    })
  }
  const id = sql.ref(`${spec.table}.id`)
  const column = sql.ref(`${spec.table}.${sortKey}`)
  const key = spec.nullable.includes(sortKey) ? sql`coalesce(${column}, '')` : column

  if (marker !== undefined) {
    const ofProject = markerProject === undefined ? sql`` : sql` and project_id = ${markerProject}`
    const found = await sql<{ id: number; v: unknown }>`
      select id, ${key} as v from ${sql.table(spec.table)} where uuid = ${marker}${ofProject}`.execute(
      db,
    )
    const row = found.rows[0]
    if (!row) {
      throw new NotFoundError(`marker ${marker} not found`, {
        code: spec.notFoundCode,
        details: { field: 'marker', marker },
      })
    }
    const op = sql.raw(sortDir === 'asc' ? '>' : '<')
    qb =
      sortKey === 'id'
        ? qb.where(sql<boolean>`${id} ${op} ${row.id}`)
        : qb.where(
            sql<boolean>`(${key} ${op} ${row.v} or (${key} = ${row.v} and ${id} ${op} ${row.id}))`,
          )
  }
  if (sortKey !== 'id') qb = qb.orderBy(key, sortDir)
  qb = qb.orderBy(id, sortDir)
  if (limit !== undefined) qb = qb.limit(limit)
  return qb
}
