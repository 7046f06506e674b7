/**
 * Query-string parsing for list endpoints. Unknown parameters are ignored (real clients send
 * extras such as `filters.field`); known ones are checked and a bad one is a 400 naming it.
 */
import { NotFoundError, invalidField } from '../domain/errors.js'

export type Query = Record<string, unknown>

/** A single-valued string parameter, or undefined when absent. */
export function stringParam(query: Query, name: string): string | undefined {
  const v = query[name]
  if (v === undefined) return undefined
  if (typeof v !== 'string') throw invalidField(name, 'must be given at most once')
  return v
}

/** A non-negative integer parameter (an internal id), or undefined when absent. */
export function idParam(query: Query, name: string): number | undefined {
  const v = stringParam(query, name)
  if (v === undefined) return undefined
  if (!/^[0-9]{1,15}$/.test(v))
    throw invalidField(name, `must be a non-negative integer, got ${JSON.stringify(v)}`)
  return Number(v)
}

/** A comma-separated list parameter (`?name=a,b`); empty items are dropped. */
export function listParam(query: Query, name: string): string[] | undefined {
  const v = stringParam(query, name)
  return v === undefined ? undefined : v.split(',').filter((s) => s !== '')
}

export interface Paging<K extends string> {
  limit?: number
  marker?: string
  sortKey?: K
  sortDir?: 'asc' | 'desc'
}

/** `limit` (positive integer), `marker`, `sort_key` (one of `sortKeys`) and `sort_dir` (asc | desc). */
export function pagingParams<K extends string>(query: Query, sortKeys: readonly K[]): Paging<K> {
  const out: Paging<K> = {}
  const limit = stringParam(query, 'limit')
  if (limit !== undefined) {
    if (!/^[1-9][0-9]{0,8}$/.test(limit))
      throw invalidField('limit', `must be a positive integer, got ${JSON.stringify(limit)}`)
    out.limit = Number(limit)
  }
  const marker = stringParam(query, 'marker')
  if (marker !== undefined) out.marker = marker
  const sortKey = stringParam(query, 'sort_key')
  if (sortKey !== undefined) {
    if (!(sortKeys as readonly string[]).includes(sortKey)) {
      throw invalidField('sort_key', `must be one of: ${sortKeys.join(', ')}`)
    }
    out.sortKey = sortKey as K
  }
  const sortDir = stringParam(query, 'sort_dir')
  if (sortDir !== undefined) {
    if (sortDir !== 'asc' && sortDir !== 'desc')
      throw invalidField('sort_dir', 'must be asc or desc')
    out.sortDir = sortDir
  }
  return out
}

/** An unknown marker is the caller's mistake (400), not a missing resource (404). */
export function markerNotFoundToInvalid(err: unknown): unknown {
  if (err instanceof NotFoundError && err.details?.field === 'marker') {
    return invalidField('marker', `no item with uuid ${String(err.details.marker ?? '')}`)
  }
  return err
}
