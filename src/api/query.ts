/**
 * Query strings after their schema (issue 17): each route's `doc.querystring` is the schema
 * Fastify checks before the handler runs (src/api/routing.ts), with Cyborg's wording for a bad
 * value (src/api/validation-errors.ts). Unknown parameters are ignored (real clients send extras
 * such as `filters.field`). What is left here only converts checked values.
 */
import { NotFoundError, invalidField } from '../domain/errors.js'
import { formatTimestamp, parseRfc3339 } from '../domain/time.js'

export interface Paging<K extends string> {
  limit?: number
  marker?: string
  sortKey?: K
  sortDir?: 'asc' | 'desc'
}

/** The paging parameters of a checked query (`pagingQuery` of src/api/schemas/common.ts). */
export interface PagingQuery {
  limit?: string
  marker?: string
  sort_key?: string
  sort_dir?: string
}

/** `limit`, `marker`, `sort_key` and `sort_dir`, as the repositories take them. */
export function pagingOf<K extends string>(query: PagingQuery): Paging<K> {
  const out: Paging<K> = {}
  if (query.limit !== undefined) out.limit = Number(query.limit)
  if (query.marker !== undefined) out.marker = query.marker
  if (query.sort_key !== undefined) out.sortKey = query.sort_key as K
  if (query.sort_dir !== undefined) out.sortDir = query.sort_dir as 'asc' | 'desc'
  return out
}

/** A comma-separated list parameter (`?name=a,b`); empty items are dropped. */
export function commaList(value: string | undefined): string[] | undefined {
  return value === undefined ? undefined : value.split(',').filter((s) => s !== '')
}

/** An unknown marker is the caller's mistake (400), not a missing resource (404). */
export function markerNotFoundToInvalid(err: unknown): unknown {
  if (err instanceof NotFoundError && err.details?.field === 'marker') {
    return invalidField('marker', `no item with uuid ${String(err.details.marker ?? '')}`)
  }
  return err
}

/**
 * A time parameter (`?since=`, `?until=`): a real RFC 3339 time (src/domain/time.ts) or a 400
 * naming it; returned in the stored timestamp format, so that it compares as text with the
 * columns. Every time parameter of every route goes through here (issue 27).
 */
export function timeQuery(value: string | undefined, field: string): string | undefined {
  if (value === undefined) return undefined
  const at = parseRfc3339(value)
  if (at instanceof Date) return formatTimestamp(at)
  const shown = value.length > 64 ? `${value.slice(0, 64)}…` : value
  throw invalidField(field, `${at.problem}, got ${JSON.stringify(shown)}`)
}
