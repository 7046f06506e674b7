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
import { boundedRounds, createPassLoop } from './pass-loop.js'
import { wakeOnWrite } from './wake-on-write.js'

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

/** Sinks whose timed-out delivery has not settled: they get nothing more until it does. */
type HungSinks = Set<EventSink>

/** One delivery to one sink, bounded by `timeoutMs`; a sink that overran gets nothing until it answers. */
async function deliverTo(
  hung: HungSinks,
  sink: EventSink,
  events: readonly OutboxEvent[],
  timeoutMs: number,
) {
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
      reject(new TimeoutError(`sink ${sink.name} did not answer within ${timeoutMs} ms`))
    }, timeoutMs)
  })
  try {
    await Promise.race([delivery, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/** One batch under the lock: undefined when another relay holds it, else how many were sent. */
async function deliverBatch(
  deps: EventRelayDeps,
  hung: HungSinks,
  batchSize: number,
  deliverTimeoutMs: number,
): Promise<number | undefined> {
  const held = await withEventRelayLock(deps.db, async (lockDb) => {
    const events = await listUnsentEvents(lockDb, batchSize)
    if (events.length === 0) return 0
    const outbox = events.map(toOutbox)
    for (const sink of deps.sinks) await deliverTo(hung, sink, outbox, deliverTimeoutMs)
    const at = formatTimestamp(deps.clock.now())
    await markEventsSent(
      lockDb,
      events.map((e) => e.id),
      at,
    )
    return events.length
  })
  return held?.value
}

/** Deletes sent events past their retention (bounded rounds under the relay lock). */
async function purgeSent(deps: EventRelayDeps, log: Logger, retentionHours: number) {
  const { db, clock } = deps
  const cutoff = formatTimestamp(new Date(clock.now().getTime() - retentionHours * 3_600_000))
  try {
    await boundedRounds(async () => {
      const held = await withEventRelayLock(db, (lockDb) => deleteSentEvents(lockDb, cutoff))
      return held?.value
    })
  } catch (err) {
    log.warn({ err }, 'could not delete old sent events; next purge retries')
  }
}

export function createEventRelay(
  deps: EventRelayDeps,
  options: EventRelayOptions = {},
): EventRelay {
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
  const hung: HungSinks = new Set()
  const loop = createPassLoop(
    {
      batch: () => deliverBatch(deps, hung, batchSize, deliverTimeoutMs),
      hasWork: () => hasUnsentEvents(deps.db.db),
      chores: [{ intervalMs: purgeIntervalMs, run: () => purgeSent(deps, log, retentionHours) }],
      log,
      messages: {
        failed: 'event delivery failed; retrying the same events',
        failedStopping: 'event delivery failed while stopping; the next start retries',
        recovered: 'event delivery works again',
        pollFailed: 'could not look for unsent events; next poll retries',
      },
    },
    { batchSize, coalesceMs, pollIntervalMs, retry: { initialMs, maxMs }, lastPass: true },
  )
  return { start: loop.start, wake: loop.wake, drain: loop.drain, stop: loop.stop }
}

/**
 * `committer`, whose `run` wakes the relay after a commit that wrote events (src/db/outbox/events.ts
 * marks a transaction that wrote some; writes without events cost nothing more).
 */
export function wakingCommitter(committer: GroupCommitter, wake: () => void): GroupCommitter {
  return wakeOnWrite(committer, takeEventsWritten, wake)
}
