/**
 * The one poller of the event outbox per API process, behind `GET /v2/events/stream` (2.10): it
 * runs only while a client is connected, reads the events above its high-water mark every
 * `pollMs` (a bounded batch per pass, by primary key) and hands each new event to every client.
 *
 * Events are written by conductors in other processes and may commit out of id order (a
 * transaction that took its id first commits later; docs/notifications.md). So an id the poller
 * has passed without seeing is a **gap**: it is read again by id on every pass, for `gapMs`, and
 * handed out when it appears ("late"); an id that never appears was a rolled-back transaction (or
 * a sequence's skip). The last late events are kept for `lateMs`, so that a client that resumes
 * (Last-Event-ID) gets those below its position that it may have missed while away; it may have
 * had them already, so clients de-duplicate by id (web/live.ts does).
 */
import type { FastifyBaseLogger } from 'fastify'
import type { ReadDb } from '../../db/reads/read-db.js'
import {
  latestEventId,
  listEventsAfter,
  listEventsByIds,
  type EventView,
} from '../../db/reads/event-reads.js'

export interface HubEvent {
  event: EventView
  /** Committed below an id handed out before it. */
  late: boolean
}

export interface HubClient {
  /** New events, in the order the poller found them. */
  deliver(events: readonly HubEvent[]): void
  /** Every `heartbeatMs` while connected. */
  heartbeat(): void
  /** The hub closes (the app closes): end the stream. */
  close(): void
}

export interface EventHubOptions {
  pollMs?: number
  batch?: number
  gapMs?: number
  lateMs?: number
  heartbeatMs?: number
}

export interface EventHub {
  /** Adds a client; starts the poller if it is the first. Returns its removal. */
  add(client: HubClient): Promise<() => void>
  /** The late events of the last `lateMs` (for a resuming client). */
  recentLate(): EventView[]
  /** Ends every client and stops the poller. */
  close(): void
  /** How many clients are connected. */
  readonly size: number
}

/** At most this many gaps are tracked; a jump of more ids than this is not gap-checked. */
const MAX_GAPS = 2000
const CHUNK = 500
/** How many ids below the newest are checked for gaps when the poller starts. */
const WINDOW = 256

/**
 * The poller's start: the newest id, and the ids of the last {@link WINDOW} below it that are not
 * there (yet) noted as gaps, since a transaction may hold one that commits after this read.
 */
async function start(db: ReadDb, gaps: Map<number, number>): Promise<number> {
  const now = Date.now()
  const top = await latestEventId(db)
  const low = Math.max(0, top - WINDOW)
  const have = new Set(
    (await listEventsAfter(db, {}, { after: low, limit: WINDOW })).map((e) => e.id),
  )
  for (let id = low + 1; id < top; id++) if (!have.has(id)) gaps.set(id, now)
  return top
}

export function createEventHub(
  db: ReadDb,
  log: FastifyBaseLogger,
  options: EventHubOptions = {},
): EventHub {
  const { pollMs = 300, batch = 500, gapMs = 30_000, lateMs = 60_000 } = options
  const heartbeatMs = options.heartbeatMs ?? 15_000
  const clients = new Set<HubClient>()
  /** The gaps: id → when first seen missing. */
  const gaps = new Map<number, number>()
  let late: { event: EventView; at: number }[] = []
  let high: number | undefined
  let timer: NodeJS.Timeout | undefined
  let beat: NodeJS.Timeout | undefined
  let closed = false
  let running = false
  /** Bumped at every stop, so that a pass in flight then hands nothing out. */
  let generation = 0

  function fanOut(events: HubEvent[]): void {
    if (events.length === 0) return
    for (const c of [...clients]) {
      try {
        c.deliver(events)
      } catch (err) {
        log.warn({ err }, 'event stream: a client failed; dropped')
        clients.delete(c)
        c.close()
      }
    }
  }

  function noteGaps(from: number, to: number, now: number): void {
    if (to - from > MAX_GAPS) return
    for (let id = from; id < to && gaps.size < MAX_GAPS; id++) gaps.set(id, now)
  }

  async function readGaps(now: number): Promise<HubEvent[]> {
    for (const [id, since] of gaps) if (now - since > gapMs) gaps.delete(id)
    const ids = [...gaps.keys()].slice(0, CHUNK)
    if (ids.length === 0) return []
    const events = await listEventsByIds(db, ids)
    return events.map((event) => {
      gaps.delete(event.id)
      late.push({ event, at: now })
      return { event, late: true }
    })
  }

  /** One pass; true when the batch was full (more may wait). */
  async function pass(): Promise<boolean> {
    const now = Date.now()
    const run = generation
    let from = high ?? (await start(db, gaps))
    const found = await readGaps(now)
    const rows = await listEventsAfter(db, {}, { after: from, limit: batch })
    if (run !== generation) return false // stopped meanwhile
    for (const event of rows) {
      if (event.id > from + 1) noteGaps(from + 1, event.id, now)
      from = event.id
      found.push({ event, late: false })
    }
    high = from
    late = late.filter((l) => now - l.at <= lateMs)
    if (!closed) fanOut(found)
    return rows.length === batch
  }

  function schedule(ms: number): void {
    if (closed || clients.size === 0 || timer !== undefined) return
    timer = setTimeout(() => {
      timer = undefined
      running = true
      pass().then(
        (more) => {
          running = false
          schedule(more ? 0 : pollMs)
        },
        (err: unknown) => {
          running = false
          log.warn({ err }, 'event stream: reading the outbox failed; retrying')
          schedule(pollMs * 4)
        },
      )
    }, ms)
  }

  function stop(): void {
    clearTimeout(timer)
    clearInterval(beat)
    timer = undefined
    beat = undefined
    // Idle: the next first client starts from the newest id again.
    generation++
    high = undefined
    gaps.clear()
  }

  return {
    get size() {
      return clients.size
    },
    async add(client) {
      if (closed) {
        client.close()
        return () => {}
      }
      if (high === undefined && !running) {
        const run = generation
        const top = await start(db, gaps)
        if (run === generation && high === undefined) high = top
      }
      clients.add(client)
      if (beat === undefined) {
        beat = setInterval(() => {
          for (const c of clients) c.heartbeat()
        }, heartbeatMs)
        beat.unref()
      }
      schedule(pollMs)
      return () => {
        clients.delete(client)
        if (clients.size === 0) stop()
      }
    },
    recentLate() {
      const now = Date.now()
      return late.filter((l) => now - l.at <= lateMs).map((l) => l.event)
    },
    close() {
      closed = true
      stop()
      for (const c of clients) c.close()
      clients.clear()
    },
  }
}
