/**
 * The Events page's data: its filters (from the URL's query), the history it loads first
 * (`GET /v2/events` at 2.10) and the feed that live events are added to, newest first, capped.
 */
import { getJson } from '../api.js'
import type { LiveEvent, LiveFilter } from '../live.js'

/** Rows kept in the page. */
export const MAX_ROWS = 500
/** Rows of history read when the page opens. */
export const HISTORY = 100

export const RESOURCE_TYPES = ['device', 'deployable', 'arq', 'driver', 'agent'] as const
export const PRIORITIES = ['INFO', 'ERROR'] as const
/** The filters, as the query string names them (the API's own names). */
export const FILTER_KEYS = ['resource_type', 'event_type', 'priority', 'resource_uuid'] as const

/** The filters of the URL's query (empty values left out). */
export function filterOf(query: URLSearchParams): LiveFilter {
  const f: Record<string, string> = {}
  for (const k of FILTER_KEYS) {
    const v = query.get(k)?.trim()
    if (v) f[k] = v
  }
  return f as LiveFilter
}

/** The newest events of `filter`, newest first. */
export async function loadHistory(filter: LiveFilter): Promise<LiveEvent[]> {
  const q = new URLSearchParams({ ...filter, limit: String(HISTORY) } as Record<string, string>)
  const body = await getJson<{ events: LiveEvent[] }>(`/v2/events?${q.toString()}`, 10)
  return body.events
}

/** `feed` with `fresh` (any order) on top, each id once, newest first, at most {@link MAX_ROWS}. */
export function addToFeed(feed: readonly LiveEvent[], fresh: readonly LiveEvent[]): LiveEvent[] {
  const byId = new Map<number, LiveEvent>()
  for (const e of [...fresh, ...feed]) if (!byId.has(e.id)) byId.set(e.id, e)
  return [...byId.values()].sort((a, b) => b.id - a.id).slice(0, MAX_ROWS)
}

/** A short account of a payload's object: its state, health, lifecycle, reason. */
export function summaryOf(e: LiveEvent): string {
  const data = (e.payload['cyborg_object.data'] ?? {}) as Record<string, unknown>
  const parts: string[] = []
  for (const k of ['state', 'health', 'lifecycle', 'status', 'hostname']) {
    const v = data[k]
    if (typeof v === 'string' && v !== '') parts.push(`${k} ${v}`)
  }
  for (const k of ['health_reason', 'lifecycle_reason', 'reason', 'error']) {
    const v = data[k]
    if (typeof v === 'string' && v !== '') parts.push(v)
  }
  return parts.join(' · ')
}
