/**
 * The event relay (issue 16): publishes the outbox. Every state change writes its events into
 * `events` in its own transaction (src/db/outbox/events.ts); the relay takes the oldest unsent rows in id
 * order, delivers them to every sink in turn, then stamps them sent. At least once: a relay that
 * dies between delivery and stamp delivers the same events (same uuids) again after a restart, or
 * another conductor's relay does.
 *
 * - One relay publishes at a time, whatever the number of conductors: a pass holds the relay lock
 *   (`withEventRelayLock`: on PostgreSQL and MariaDB the `event_relay` row, locked FOR UPDATE SKIP
 *   LOCKED in a transaction that lasts from the read through the delivery to the stamp); another
 *   relay finding it held skips its turn. A dead relay's connection drops and with it the lock.
 * - Order: id order within a batch and across passes, which keeps each resource's events in the
 *   order of its changes (a change locks its resource's row before writing its event, so the next
 *   change of that resource gets a higher id and commits later). Across resources a late commit
 *   may be delivered after a higher id: unsent rows are read by `sent_at IS NULL`, never skipped.
 * - Woken after every commit that wrote events (`wakingCommitter`), and polls (one indexed read)
 *   for rows another or a killed conductor left. Runs on its own: a failing sink delays delivery
 *   (retried with backoff, the same batch again to every sink), never the conductor's writes.
 * - Sent rows are kept `retentionHours`, then deleted. With no sinks, rows are stamped sent at once.
 * - Bounded work per pass: `batchSize` events per batch (an indexed read), 1000 rows per purge
 *   round, and a yield to the event loop between batches and rounds, so that a backlog on SQLite
 *   (whose calls are synchronous) never holds the API, RPCs or the agent of the same process.
 */
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { DatabaseHandle } from '../../db/core/connection.js'
import {
  deleteSentEvents,
  hasUnsentEvents,
  listUnsentEvents,
  markEventsSent,
  takeEventsWritten,
  withEventRelayLock,
} from '../../db/outbox/events.js'
import type { GroupCommitter } from '../../db/core/group-commit.js'
import type { StoredEvent } from '../../domain/events.js'
import { TimeoutError } from '../../domain/errors.js'
import type { Logger } from '../../domain/logger.js'
import { formatTimestamp, type Clock } from '../../domain/time.js'
import type { EventSink, OutboxEvent } from './event-sinks.js'
import { coalescedWake, wakeOnWrite } from './wake-on-write.js'

export interface EventRelayOptions {
  /** Events per delivery. @default 100 */
  batchSize?: number
  /**
   * How long a wake waits for more commits to share its pass (0: the same turn only); bounds the
   * relay to about 1000 / coalesceMs passes a second whatever the commit rate. @default 50
   */
  coalesceMs?: number
  /** How often to look for events nobody woke this relay for (another conductor's, a killed one's). @default 1000 */
  pollIntervalMs?: number
  /** `[events] retention_hours`: how long sent events are kept. @default 24 */
  retentionHours?: number
  /** How often sent events past their retention are deleted. @default 600000 */
  purgeIntervalMs?: number
  /** A sink that has not answered a delivery in this long failed it (the batch is retried). @default 30000 */
  deliverTimeoutMs?: number
  /** Wait after a failed delivery: `initialMs`, doubled after each failure in a row, at most `maxMs`. */
  retry?: { initialMs?: number; maxMs?: number }
}

export interface EventRelayDeps {
  db: DatabaseHandle
  sinks: readonly EventSink[]
  log: Logger
  clock: Clock
}

export interface EventRelay {
  /** Polls from now on; the first poll (one `pollIntervalMs` away) finds what a stopped conductor left. */
  start(): void
  /** Asks for a pass (after a commit that wrote events); passes never overlap. */
  wake(): void
  /**
   * Delivers until nothing is unsent, another relay holds the lock, or a delivery fails; resolves
   * with the number of events delivered.
   */
  drain(): Promise<number>
  /** Stops polling, waits for the pass in flight, and tries one last pass unless sinks are failing. */
  stop(): Promise<void>
}

/** The outbox row as sinks receive it. */
const toOutbox = (e: StoredEvent): OutboxEvent => ({
  id: e.id,
  uuid: e.uuid,
  eventType: e.eventType,
  priority: e.priority,
  resourceType: e.resourceType,
  resourceUuid: e.resourceUuid,
  projectId: e.projectId,
  payload: e.payload,
  createdAt: e.createdAt,
})

export function createEventRelay(
  deps: EventRelayDeps,
  options: EventRelayOptions = {},
): EventRelay {
  const { db, sinks, clock } = deps
  const log = deps.log.child({ component: 'event-relay' })
  const {
    batchSize = 100,
    pollIntervalMs = 1000,
    retentionHours = 24,
    purgeIntervalMs = 600_000,
    deliverTimeoutMs = 30_000,
    coalesceMs = 50,
  } = options
  const { initialMs = 500, maxMs = 30_000 } = options.retry ?? {}
  /** Sinks whose timed-out delivery has not settled: they get nothing more until it does. */
  const hung = new Set<EventSink>()
  let inFlight: Promise<number> | undefined
  let again = false
  let stopped = false
  let failures = 0
  let retryTimer: NodeJS.Timeout | undefined
  let poller: NodeJS.Timeout | undefined
  let purger: NodeJS.Timeout | undefined

  const deliverTo = async (sink: EventSink, events: readonly OutboxEvent[]) => {
    if (hung.has(sink))
      throw new TimeoutError(`sink ${sink.name} has not finished an earlier delivery`)
    const delivery = sink.deliver(events)
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        hung.add(sink)
        void delivery.then(
          () => hung.delete(sink),
          () => hung.delete(sink),
        )
        reject(new TimeoutError(`sink ${sink.name} did not answer within ${deliverTimeoutMs} ms`))
      }, deliverTimeoutMs)
    })
    try {
      await Promise.race([delivery, timeout])
    } finally {
      clearTimeout(timer)
    }
  }

  /** One batch under the lock: undefined when another relay holds it, else how many were sent. */
  const deliverBatch = async (): Promise<number | undefined> => {
    const held = await withEventRelayLock(db, async (lockDb) => {
      const events = await listUnsentEvents(lockDb, batchSize)
      if (events.length === 0) return 0
      const outbox = events.map(toOutbox)
      for (const sink of sinks) await deliverTo(sink, outbox)
      const at = formatTimestamp(clock.now())
      await markEventsSent(
        lockDb,
        events.map((e) => e.id),
        at,
      )
      return events.length
    })
    return held?.value
  }

  const scheduleRetry = (err: unknown) => {
    failures++
    if (stopped) {
      log.warn({ err, failures }, 'event delivery failed while stopping; the next start retries')
      return
    }
    const waitMs = Math.min(maxMs, initialMs * 2 ** Math.min(failures - 1, 20))
    log.warn(
      { err, failures, retryInMs: waitMs },
      'event delivery failed; retrying the same events',
    )
    clearTimeout(retryTimer)
    retryTimer = setTimeout(() => {
      retryTimer = undefined
      if (!stopped) void run()
    }, waitMs)
    retryTimer.unref()
  }

  /** Batches until none is left; a failure schedules the retry. */
  const pass = async (): Promise<number> => {
    let sent = 0
    for (;;) {
      let n: number | undefined
      try {
        n = await deliverBatch()
      } catch (err) {
        scheduleRetry(err)
        return sent
      }
      if (failures > 0 && n !== undefined) log.info({ failures }, 'event delivery works again')
      if (n !== undefined) failures = 0
      if (!n) return sent
      sent += n
      // A short batch read every unsent row committed when it read: a later commit wakes a pass of
      // its own (`again`), so another read now would find nothing (one transaction saved a pass).
      if (n < batchSize) return sent
      // Bounded work per batch, and the event loop's turn between batches (API reads, RPCs).
      await nextTurn()
    }
  }

  /** Runs a pass now, or once the one in flight ends. */
  const run = (): Promise<number> => {
    if (inFlight) {
      again = true
      return inFlight
    }
    const current = pass().finally(() => {
      inFlight = undefined
      if (again && !stopped && retryTimer === undefined) {
        again = false
        void run()
      }
    })
    inFlight = current
    return current
  }

  const waker = coalescedWake(() => {
    if (!stopped && retryTimer === undefined) void run()
  }, coalesceMs)

  const poll = async () => {
    if (inFlight || retryTimer !== undefined) return
    try {
      if (await hasUnsentEvents(db.db)) await run()
    } catch (err) {
      log.warn({ err }, 'could not look for unsent events; next poll retries')
    }
  }

  const purge = async () => {
    const cutoff = formatTimestamp(new Date(clock.now().getTime() - retentionHours * 3_600_000))
    try {
      for (let round = 0; round < 20; round++) {
        const held = await withEventRelayLock(db, (lockDb) => deleteSentEvents(lockDb, cutoff))
        if (!held || held.value < 1000) break
        await nextTurn()
      }
    } catch (err) {
      log.warn({ err }, 'could not delete old sent events; next purge retries')
    }
  }

  return {
    start() {
      if (stopped || poller) return
      poller = setInterval(() => void poll(), pollIntervalMs)
      poller.unref()
      purger = setInterval(() => void purge(), purgeIntervalMs)
      purger.unref()
    },
    wake() {
      if (!stopped && retryTimer === undefined) waker.wake()
    },
    async drain() {
      if (inFlight) await inFlight
      return run()
    },
    async stop() {
      stopped = true
      clearInterval(poller)
      clearInterval(purger)
      clearTimeout(retryTimer)
      waker.cancel()
      retryTimer = undefined
      again = false
      while (inFlight) await inFlight
      if (failures === 0) await pass()
    },
  }
}

/**
 * `committer`, whose `run` wakes the relay after a commit that wrote events (src/db/outbox/events.ts
 * marks a transaction that wrote some; writes without events cost nothing more).
 */
export function wakingCommitter(committer: GroupCommitter, wake: () => void): GroupCommitter {
  return wakeOnWrite(committer, takeEventsWritten, wake)
}
