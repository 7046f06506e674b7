/**
 * The webhook dispatcher (docs/webhooks.md): posts the deliveries the webhook sink queued.
 *
 * - Apart from the RPC path: it runs on its own timers and promises, writes through its own short
 *   transactions (never the group committer), and has at most `concurrency` posts in flight, each
 *   bounded by `timeoutMs`; a slow or dead receiver holds one slot, never a conductor write.
 * - Per-endpoint order: it claims an endpoint (src/db/webhook-claims.ts: a lease, SKIP LOCKED on
 *   PostgreSQL and MariaDB), then sends that endpoint's pending deliveries oldest first, one at a
 *   time, up to `turnSize`, and lets it go. A delivery that fails holds back the ones after it
 *   until it succeeds or goes dead: the endpoint backs off (`retry_at`) meanwhile.
 * - Retries: exponential backoff with full jitter (src/domain/webhooks.ts `retryDelayMs`); after
 *   `maxAttempts` failed attempts the delivery is `dead` (the dead letter) and the next one goes.
 * - Several conductors: each runs a dispatcher; the lease keeps them off each other's endpoints.
 *   A dispatcher that dies holding one leaves it to the others once the lease (`leaseMs`, longer
 *   than an attempt) runs out, and that delivery is sent again: at least once, same `webhook-id`.
 */
import type { DatabaseHandle } from '../db/connection.js'
import {
  claimDueWebhooks,
  recordDelivered,
  recordDeliveryAttempt,
  releaseWebhookClaim,
  updateWebhookClaim,
  type AttemptOutcome,
  type ClaimedWebhook,
} from '../db/webhook-claims.js'
import { deleteDeliveredBefore, listPendingDeliveries } from '../db/webhook-deliveries.js'
import { newUuid } from '../domain/ids.js'
import type { Logger } from '../domain/logger.js'
import { formatTimestamp, type Clock } from '../domain/time.js'
import { webhookHeaders } from '../domain/webhook-signature.js'
import { DeliveryState, retryDelayMs } from '../domain/webhooks.js'
import { postWebhook, type PostResult } from './webhook-post.js'

/** Deliveries read at a time, and successes recorded together. */
const BATCH = 32

export interface WebhookDispatcherOptions {
  /** `[webhooks] timeout_seconds` in ms: an attempt not answered by then failed. @default 10000 */
  timeoutMs?: number
  /** `[webhooks] concurrency`: endpoints posted to at once by this dispatcher. @default 8 */
  concurrency?: number
  /** `[webhooks] max_attempts`: failed attempts before a delivery is dead. @default 8 */
  maxAttempts?: number
  /** `[webhooks] backoff_seconds` in ms: the first retry's upper bound. @default 1000 */
  backoffMs?: number
  /** `[webhooks] max_backoff_seconds` in ms: no retry waits longer. @default 300000 */
  maxBackoffMs?: number
  /** `[webhooks] retention_hours`: how long delivered rows are kept. @default 24 */
  retentionHours?: number
  /** How often to look for due deliveries (another conductor's, retries). @default 1000 */
  pollIntervalMs?: number
  /** How often delivered rows past their retention are deleted. @default 600000 */
  purgeIntervalMs?: number
  /** Deliveries sent to one endpoint per claim, before it is let go so others get a turn. @default 100 */
  turnSize?: number
  /** How long a claim lasts unless renewed (renewed before each attempt). @default 2 × timeoutMs + 5000 */
  leaseMs?: number
}

export interface WebhookDispatcherDeps {
  db: DatabaseHandle
  log: Logger
  clock: Clock
  /** Claim tokens. @default newUuid */
  uuid?: () => string
  /** Draws of the jitter, in [0, 1). @default Math.random */
  random?: () => number
}

export interface WebhookDispatcher {
  /** Polls from now on. */
  start(): void
  /** Looks for due deliveries now (after the sink queued some). */
  wake(): void
  /** Resolves once nothing is in flight and no endpoint has a delivery due now (tests). */
  idle(): Promise<void>
  /** Stops polling, aborts the posts in flight (not counted as attempts) and lets claims go. */
  stop(): Promise<void>
}

export function createWebhookDispatcher(
  deps: WebhookDispatcherDeps,
  options: WebhookDispatcherOptions = {},
): WebhookDispatcher {
  const { db, clock, uuid = newUuid, random = Math.random } = deps
  const log = deps.log.child({ component: 'webhook-dispatcher' })
  const {
    timeoutMs = 10_000,
    concurrency = 8,
    maxAttempts = 8,
    backoffMs = 1000,
    maxBackoffMs = 300_000,
    retentionHours = 24,
    pollIntervalMs = 1000,
    purgeIntervalMs = 600_000,
    turnSize = 100,
  } = options
  const leaseMs = options.leaseMs ?? 2 * timeoutMs + 5000
  const schedule = { baseMs: backoffMs, capMs: maxBackoffMs }
  const halt = new AbortController()
  /** Endpoints (row ids) this dispatcher is serving, and their runs. */
  const serving = new Map<number, Promise<void>>()
  let ticking: Promise<void> | undefined
  let again = false
  let stopped = false
  let poller: NodeJS.Timeout | undefined
  let purger: NodeJS.Timeout | undefined
  let dueTimer: { at: number; timer: NodeJS.Timeout } | undefined
  const at = (ms: number) => formatTimestamp(new Date(ms))

  /** Wakes again when the earliest backoff ends (the poll would find it too, later). */
  const wakeAt = (when: string) => {
    const ms = Date.parse(when)
    if (stopped || (dueTimer && dueTimer.at <= ms)) return
    clearTimeout(dueTimer?.timer)
    const timer = setTimeout(
      () => {
        dueTimer = undefined
        wake()
      },
      Math.max(0, ms - clock.now().getTime()),
    )
    timer.unref()
    dueTimer = { at: ms, timer }
  }

  const outcomeOf = (result: PostResult, attempts: number): AttemptOutcome => {
    const now = clock.now().getTime()
    const ok = result.status !== null && result.status >= 200 && result.status < 300
    const base = { attempts, at: at(now), status: result.status, error: result.error }
    if (ok) return { ...base, state: DeliveryState.Delivered, error: null, nextAttemptAt: at(now) }
    if (attempts >= maxAttempts)
      return { ...base, state: DeliveryState.Dead, nextAttemptAt: at(now) }
    const next = at(now + retryDelayMs(attempts, schedule, random))
    return { ...base, state: DeliveryState.Pending, nextAttemptAt: next }
  }

  /**
   * Sends `w`'s due deliveries in order under the claim `token`, then lets it go. Deliveries are
   * read a batch at a time, and a run of successes is recorded in one transaction when the batch
   * ends or a delivery fails (a crash before that sends them again: at least once, same id).
   */
  const serve = async (w: ClaimedWebhook, token: string, leaseEnd: number) => {
    let until = leaseEnd
    let sent = 0
    const delivered: { deliveryId: number; status: number }[] = []
    const flush = async () => {
      const ok = await recordDelivered(
        db.db,
        { webhookId: w.id, token },
        delivered,
        at(clock.now().getTime()),
      )
      delivered.length = 0
      if (!ok) log.warn({ webhook: w.uuid }, 'lost the claim on a webhook mid-send')
      return ok
    }
    turn: while (sent < turnSize && !stopped) {
      const batch = await listPendingDeliveries(db.db, w.id, Math.min(BATCH, turnSize - sent))
      if (batch.length === 0) break
      for (const d of batch) {
        const now = clock.now().getTime()
        if (d.nextAttemptAt > at(now)) {
          wakeAt(d.nextAttemptAt)
          break turn
        }
        if (until - now < timeoutMs + 5000) {
          until = now + leaseMs
          if (!(await updateWebhookClaim(db.db, w.id, token, at(until)))) return
        }
        const headers = webhookHeaders(w.secret, d.eventUuid, clock.now(), d.body)
        const result = await postWebhook(w.url, headers, d.body, timeoutMs, halt.signal)
        if (result.aborted) break turn // stopping: not an attempt; the next holder sends it again
        sent++
        const outcome = outcomeOf(result, d.attempts + 1)
        if (outcome.state === DeliveryState.Delivered) {
          delivered.push({ deliveryId: d.id, status: result.status! })
          continue
        }
        if (!(await flush())) return
        const claim = { webhookId: w.id, token, deliveryId: d.id }
        if (!(await recordDeliveryAttempt(db.db, claim, outcome))) {
          log.warn({ webhook: w.uuid, event: d.eventUuid }, 'lost the claim on a webhook mid-send')
          return
        }
        if (outcome.state === DeliveryState.Dead) {
          log.warn(
            { webhook: w.uuid, event: d.eventUuid, status: result.status, error: result.error },
            `webhook delivery dead after ${outcome.attempts} attempts`,
          )
          continue
        }
        log.info(
          { webhook: w.uuid, event: d.eventUuid, status: result.status, error: result.error },
          `webhook delivery failed (attempt ${outcome.attempts}); retrying at ${outcome.nextAttemptAt}`,
        )
        wakeAt(outcome.nextAttemptAt)
        break turn
      }
      if (!(await flush())) return
    }
    if (!(await flush())) return
    await releaseWebhookClaim(db.db, w.id, token, at(clock.now().getTime()))
  }

  /** Claims what free slots allow and starts serving it. */
  const tick = async () => {
    const free = concurrency - serving.size
    if (stopped || free <= 0) return
    const token = uuid()
    const now = clock.now().getTime()
    const until = now + leaseMs
    const claimed = await claimDueWebhooks(db, {
      token,
      now: at(now),
      until: at(until),
      limit: free,
    })
    for (const w of claimed) {
      const run = serve(w, token, until)
        .catch(async (err: unknown) => {
          log.warn({ err, webhook: w.uuid }, 'webhook dispatch failed; the next turn retries')
          await releaseWebhookClaim(db.db, w.id, token, at(clock.now().getTime())).catch(
            () => undefined,
          )
        })
        .finally(() => {
          serving.delete(w.id)
          wake()
        })
      serving.set(w.id, run)
    }
  }

  /** Runs a claim round now, or once more after the one in flight. */
  const runTick = (): Promise<void> => {
    if (stopped) return Promise.resolve()
    if (ticking) {
      again = true
      return ticking
    }
    const current = tick()
      .catch((err: unknown) => log.warn({ err }, 'could not claim webhooks; next poll retries'))
      .finally(() => {
        ticking = undefined
        if (again) {
          again = false
          void runTick()
        }
      })
    ticking = current
    return current
  }
  const wake = () => void runTick()

  const purge = async () => {
    const cutoff = at(clock.now().getTime() - retentionHours * 3_600_000)
    try {
      for (let round = 0; round < 20; round++)
        if ((await deleteDeliveredBefore(db.db, cutoff)) < 1000) break
    } catch (err) {
      log.warn({ err }, 'could not delete old webhook deliveries; next purge retries')
    }
  }

  return {
    start() {
      if (stopped || poller) return
      poller = setInterval(wake, pollIntervalMs)
      poller.unref()
      purger = setInterval(() => void purge(), purgeIntervalMs)
      purger.unref()
      wake()
    },
    wake,
    async idle() {
      for (;;) {
        await runTick()
        while (ticking) await ticking
        if (serving.size === 0) return
        await Promise.all(serving.values())
      }
    },
    async stop() {
      stopped = true
      clearInterval(poller)
      clearInterval(purger)
      clearTimeout(dueTimer?.timer)
      halt.abort()
      await ticking
      await Promise.all(serving.values())
    },
  }
}
