/**
 * Live updates: the events the API streams (`GET /v2/events/stream`, server-sent events from the
 * event outbox, docs/notifications.md "Events"). A page subscribes while it is shown and reads
 * again when an event of what it draws arrives, so a fenced device turns red with no reload.
 *
 * One connection per page for every subscriber, opened with the first and closed with the last.
 * It is read with `fetch` (EventSource cannot send X-Auth-Token) and web/sse.ts; after a drop it
 * reconnects with Last-Event-ID (1 s, then doubling up to 30 s), and each event id is delivered
 * once even when the API sends it again.
 */
import { apiHeaders, onTokenChange } from './api.js'
import { sseReader } from './sse.js'

/** One event as the API's event stream sends it (the outbox row, snake_case). */
export interface LiveEvent {
  id: number
  uuid: string
  event_type: string
  priority: 'INFO' | 'ERROR'
  resource_type: 'device' | 'deployable' | 'arq' | 'driver' | 'agent'
  resource_uuid: string
  project_id: string | null
  payload: Record<string, unknown>
  created_at: string
}

/** Which events a subscriber wants (every field optional; all must match). */
export interface LiveFilter {
  resource_type?: string
  resource_uuid?: string
  /** An exact type, or a prefix ending with `.`. */
  event_type?: string
  priority?: string
}

/** The connection: `live` while the stream is open, `connecting` (or again after a drop). */
export type LiveState = 'connecting' | 'live' | 'closed'

/** The connection's state in words (with a mark: colour is never alone). */
export const LIVE_WORDS: Record<LiveState, string> = {
  live: '● live',
  connecting: '○ connecting…',
  closed: '○ not connected',
}

/** Whether `e` passes `f` (the API's filters, applied in the page). */
export function liveMatches(f: LiveFilter, e: LiveEvent): boolean {
  const t = f.event_type
  return (
    (!f.resource_type || e.resource_type === f.resource_type) &&
    (!f.resource_uuid || e.resource_uuid === f.resource_uuid) &&
    (!f.priority || e.priority === f.priority) &&
    (!t || (t.endsWith('.') ? e.event_type.startsWith(t) : e.event_type === t))
  )
}

interface Subscriber {
  onEvent: (e: LiveEvent) => void
  filter: LiveFilter
}

const subscribers = new Set<Subscriber>()
const stateListeners = new Set<(s: LiveState) => void>()
const seen = new Set<number>()
let state: LiveState = 'closed'
let lastId: string | undefined
let abort: AbortController | undefined
let retryTimer: ReturnType<typeof setTimeout> | undefined
let backoff = 1000

function setState(s: LiveState): void {
  state = s
  for (const l of stateListeners) l(s)
}

function deliver(e: LiveEvent): void {
  if (seen.has(e.id)) return
  seen.add(e.id)
  if (seen.size > 2000) seen.delete(seen.values().next().value!)
  for (const s of [...subscribers]) if (liveMatches(s.filter, e)) s.onEvent(e)
}

async function read(signal: AbortSignal): Promise<void> {
  const headers = apiHeaders('text/event-stream', 10)
  if (lastId !== undefined) headers['Last-Event-ID'] = lastId
  const res = await fetch('/v2/events/stream', { headers, signal, cache: 'no-store' })
  if (!res.ok || !res.body) throw new Error(`event stream: ${res.status}`)
  setState('live')
  const feed = sseReader(
    (m) => {
      try {
        deliver(JSON.parse(m.data) as LiveEvent)
        backoff = 1000
      } catch {
        // not an event: ignored
      }
    },
    undefined,
    // The API names its position first, so a drop before any event still resumes from there.
    (id) => {
      if (id !== '') lastId = id
    },
  )
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return
    feed(value)
  }
}

function connect(): void {
  const controller = new AbortController()
  abort = controller
  setState('connecting')
  read(controller.signal)
    .catch(() => undefined)
    .finally(() => {
      if (abort !== controller || subscribers.size === 0) return
      setState('connecting')
      retryTimer = setTimeout(connect, backoff)
      backoff = Math.min(backoff * 2, 30_000)
    })
}

function disconnect(): void {
  clearTimeout(retryTimer)
  abort?.abort()
  abort = undefined
  lastId = undefined
  setState('closed')
}

// A new token (a login, a logout) opens the stream again at once, as the new caller, instead of
// waiting out the backoff of a stream refused without one.
onTokenChange(() => {
  if (subscribers.size === 0) return
  clearTimeout(retryTimer)
  const old = abort
  abort = undefined
  old?.abort()
  backoff = 1000
  connect()
})

/** Calls `onEvent` for each event (of `filter`, when given) from now on; returns the unsubscribe. */
export function subscribeEvents(
  onEvent: (e: LiveEvent) => void,
  filter: LiveFilter = {},
): () => void {
  const s = { onEvent, filter }
  subscribers.add(s)
  if (abort === undefined) connect()
  return () => {
    subscribers.delete(s)
    if (subscribers.size === 0) disconnect()
  }
}

/** Calls `onState` now and at each change of the connection; returns the removal. */
export function watchLiveState(onState: (s: LiveState) => void): () => void {
  stateListeners.add(onState)
  onState(state)
  return () => void stateListeners.delete(onState)
}

/**
 * Resolves once the stream is open, or after `timeoutMs` (a refused or slow stream must not hold
 * the page). A page subscribes first, then reads after this: a stream starts at its connection, so
 * an event that commits between a read and the connection would otherwise be missed. Reconnects
 * resume from Last-Event-ID and miss nothing.
 */
export function whenLive(timeoutMs: number): Promise<void> {
  if (state === 'live') return Promise.resolve()
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer)
      unwatch()
      resolve()
    }
    const timer = setTimeout(done, timeoutMs)
    // Not live now, so this does not call `done` before `unwatch` exists.
    const unwatch = watchLiveState((s) => {
      if (s === 'live') done()
    })
  })
}
