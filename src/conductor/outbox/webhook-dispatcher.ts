/**
 * The webhook dispatcher (docs/webhooks.md): posts the deliveries the webhook sink queued.
 *
 * - Apart from the RPC path: it runs on its own timers and promises, writes through its own short
 *   transactions (never the group committer), and has at most `concurrency` posts in flight, each
 *   bounded by `timeoutMs`; a slow or dead receiver holds one slot, never a conductor write.
 * - Order per resource: it claims an endpoint (src/db/outbox/webhook-claims.ts: a lease, SKIP LOCKED on
 *   PostgreSQL and MariaDB), then sends that endpoint's pending deliveries in queue order, up to
 *   `maxInFlight` at once but never two of one resource (webhook-sender.ts), up to `turnSize`,
 *   and lets it go. A delivery that fails holds back the ones after it until it succeeds or goes
 *   dead: the endpoint backs off (`retry_at`) meanwhile.
 * - Retries: exponential backoff with full jitter (src/domain/webhooks/webhooks.ts `retryDelayMs`); after
 *   `maxAttempts` failed attempts the delivery is `dead` (the dead letter) and the next one goes.
 * - Several conductors: each runs a dispatcher; the lease keeps them off each other's endpoints.
 *   A dispatcher that dies holding one leaves it to the others once the lease (`leaseMs`, longer
 *   than an attempt) runs out, and that delivery is sent again: at least once, same `webhook-id`.
 */
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { DatabaseHandle } from '../../db/core/connection.js'
import {
  claimDueWebhooks,
  recordAttempts,
  recordDelivered,
  releaseWebhookClaim,
  updateWebhookClaim,
  type AttemptOutcome,
  type ClaimedWebhook,
} from '../../db/outbox/webhook-claims.js'
import {
  deleteDeliveredBefore,
  listPendingDeliveries,
  type PendingDelivery,
} from '../../db/outbox/webhook-deliveries.js'
import { newUuid } from '../../domain/ids.js'
import type { Logger } from '../../domain/logger.js'
import { formatTimestamp, type Clock } from '../../domain/time.js'
import { webhookSigner, type WebhookSigner } from '../../domain/webhooks/webhook-signature.js'
import { deliveryResource } from '../../domain/webhooks/webhook-window.js'
import { DeliveryState, retryDelayMs } from '../../domain/webhooks/webhooks.js'
import { createWebhookPoster, type PostResult } from './webhook-post.js'
import { sendBatch } from './webhook-sender.js'

/** Deliveries read at a time, and successes recorded together. */
const BATCH = 200

/** A failed attempt, and what it makes of its delivery. */
interface Failure {
  d: PendingDelivery
  result: PostResult
  outcome: AttemptOutcome
}

export interface WebhookDispatcherOptions {
  /** `[webhooks] timeout_seconds` in ms: an attempt not answered by then failed. @default 10000 */
  timeoutMs?: number
  /** `[webhooks] concurrency`: endpoints posted to at once by this dispatcher. @default 8 */
  concurrency?: number
  /** `[webhooks] max_in_flight`: deliveries in flight at once per endpoint (1: strict queue order). @default 16 */
  maxInFlight?: number
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
  /** Deliveries sent to one endpoint per claim, before it is let go so others get a turn. @default 400 */
  turnSize?: number
  /** How long a claim lasts unless renewed (renewed every third of it while sending). @default 2 × timeoutMs + 5000 */
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
  /**
   * Applies reloaded `[webhooks]` options (SIGHUP): posts, claims and retries that start from now
   * on use them; those in flight finish under the old ones. Options left out keep their values.
   */
  reconfigure(options: WebhookDispatcherOptions): void
}

export function createWebhookDispatcher(
  deps: WebhookDispatcherDeps,
  options: WebhookDispatcherOptions = {},
): WebhookDispatcher {
  const { db, clock, uuid = newUuid, random = Math.random } = deps
  const log = deps.log.child({ component: 'webhook-dispatcher' })
  const { pollIntervalMs = 1000, purgeIntervalMs = 600_000 } = options
  // `let`: reconfigure() replaces them; every use below reads them when it runs.
  let {
    timeoutMs = 10_000,
    concurrency = 8,
    maxInFlight = 64,
    maxAttempts = 8,
    retentionHours = 24,
    turnSize = 400,
  } = options
  let leaseMs = options.leaseMs ?? 2 * timeoutMs + 5000
  let schedule = { baseMs: options.backoffMs ?? 1000, capMs: options.maxBackoffMs ?? 300_000 }
  const poster = createWebhookPoster(timeoutMs)
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

  /** The outcome of a failed attempt: retry later, or dead. */
  const failureOf = (result: PostResult, attempts: number): AttemptOutcome => {
    const now = clock.now().getTime()
    const base = { attempts, at: at(now), status: result.status, error: result.error }
    if (attempts >= maxAttempts)
      return { ...base, state: DeliveryState.Dead, nextAttemptAt: at(now) }
    const next = at(now + retryDelayMs(attempts, schedule, random))
    return { ...base, state: DeliveryState.Pending, nextAttemptAt: next }
  }

  /** Signers by endpoint secret (a secret's key is prepared once). */
  const signers = new Map<string, WebhookSigner>()
  const signerOf = (secret: string) => {
    let signer = signers.get(secret)
    if (!signer) signers.set(secret, (signer = webhookSigner(secret)))
    return signer
  }

  /**
   * Records the failed attempts of a run in one transaction (at most the window's), and backs the
   * endpoint off: until its oldest failed delivery's retry, or now when that one went dead (the
   * receiver still fails: the next turn probes with one delivery). Resolves with when the
   * endpoint is due again, or false if the claim was lost.
   */
  const recordFailures = async (w: ClaimedWebhook, token: string, failed: readonly Failure[]) => {
    const head = [...failed].sort((a, b) => a.d.id - b.d.id)[0]!.outcome
    const retryAt = head.state === DeliveryState.Pending ? head.nextAttemptAt : head.at
    const attempts = failed.map(({ d, outcome }) => ({ deliveryId: d.id, outcome }))
    if (!(await recordAttempts(db.db, { webhookId: w.id, token }, attempts, retryAt))) {
      log.warn({ webhook: w.uuid }, 'lost the claim on a webhook mid-send')
      return false
    }
    for (const { d, result, outcome } of failed) {
      const detail = {
        webhook: w.uuid,
        event: d.eventUuid,
        status: result.status,
        error: result.error,
      }
      if (outcome.state === DeliveryState.Dead)
        log.warn(detail, `webhook delivery dead after ${outcome.attempts} attempts`)
      else
        log.info(
          detail,
          `webhook delivery failed (attempt ${outcome.attempts}); retrying at ${outcome.nextAttemptAt}`,
        )
    }
    return retryAt
  }

  /**
   * Sends `w`'s due deliveries under the claim `token`, then lets it go: a batch at a time through
   * the sliding window of webhook-sender.ts (up to `maxInFlight` at once, one per resource). The
   * claim is renewed while posts are in flight. Successes are recorded in one transaction per
   * batch (a crash before that sends them again: at least once, same id). A failure ends the turn
   * and backs the endpoint off: it holds back the rest until it gets through. An endpoint claimed
   * while backing off gets one delivery, its oldest (a probe, one row read), and its window
   * opens only once that is answered 2xx: a dead receiver costs one attempt per back-off period.
   * Each batch is bounded (`BATCH` rows, the window's posts) and the loop yields between batches.
   */
  const serve = async (w: ClaimedWebhook, token: string, leaseEnd: number) => {
    const sign = signerOf(w.secret)
    let sent = 0
    let lost = false
    let renewing: Promise<void> | undefined
    const renew = () => {
      renewing ??= updateWebhookClaim(db.db, w.id, token, at(clock.now().getTime() + leaseMs))
        .then((held) => {
          if (!held) lost = true
        })
        .catch((err: unknown) => log.warn({ err, webhook: w.uuid }, 'could not renew a claim'))
        .finally(() => (renewing = undefined))
    }
    let until = leaseEnd
    const renewer = setInterval(
      () => {
        until = clock.now().getTime() + leaseMs
        renew()
      },
      Math.max(10, leaseMs / 3),
    )
    renewer.unref()
    let probing = w.backingOff
    try {
      while (sent < turnSize && !stopped && !lost) {
        if (sent > 0) await nextTurn()
        const rows = probing ? 1 : Math.min(BATCH, turnSize - sent)
        const batch = await listPendingDeliveries(db.db, w.id, rows)
        if (batch.length === 0) break
        // Every delivery is due: the endpoint's backoff (`retry_at`, checked by the claim) is
        // what holds its queue back, so a turn never waits on one not yet due.
        const queue = batch.map((d) => ({
          d,
          resource: deliveryResource(d.body),
          nextAttemptAt: '',
        }))
        if (until - clock.now().getTime() < timeoutMs + 5000) {
          until = clock.now().getTime() + leaseMs
          if (!(await updateWebhookClaim(db.db, w.id, token, at(until)))) return
        }
        const outcome = await sendBatch(queue, {
          maxInFlight: probing ? 1 : maxInFlight,
          now: () => at(clock.now().getTime()),
          post: ({ d }) => poster.post(w.url, sign(d.eventUuid, clock.now(), d.body), d.body),
          mayStart: () => !stopped && !lost,
        })
        await renewing
        sent += outcome.delivered.length + outcome.failed.length
        if (lost) return log.warn({ webhook: w.uuid }, 'lost the claim on a webhook mid-send')
        const failed = outcome.failed.map(({ d, result }) => ({
          d,
          result,
          outcome: failureOf(result, d.attempts + 1),
        }))
        if (!(await flush(w, token, outcome.delivered))) return
        if (outcome.delivered.length > 0) probing = false
        if (failed.length > 0) {
          const due = await recordFailures(w, token, failed)
          if (due === false) return
          wakeAt(due)
          break
        }
        if (outcome.aborted) break
      }
    } finally {
      clearInterval(renewer)
      await renewing
    }
    if (!lost) await releaseWebhookClaim(db.db, w.id, token, at(clock.now().getTime()))
  }

  /** Records a batch's successes; resolves false if the claim was lost. */
  const flush = async (
    w: ClaimedWebhook,
    token: string,
    delivered: readonly { deliveryId: number; status: number }[],
  ) => {
    if (delivered.length === 0) return true
    const finishedAt = at(clock.now().getTime())
    const ok = await recordDelivered(db.db, { webhookId: w.id, token }, delivered, finishedAt)
    if (!ok) log.warn({ webhook: w.uuid }, 'lost the claim on a webhook mid-send')
    return ok
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
        else await nextTurn()
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
    reconfigure(next: WebhookDispatcherOptions) {
      timeoutMs = next.timeoutMs ?? timeoutMs
      concurrency = next.concurrency ?? concurrency
      maxInFlight = next.maxInFlight ?? maxInFlight
      maxAttempts = next.maxAttempts ?? maxAttempts
      retentionHours = next.retentionHours ?? retentionHours
      turnSize = next.turnSize ?? turnSize
      leaseMs = next.leaseMs ?? options.leaseMs ?? 2 * timeoutMs + 5000
      schedule = {
        baseMs: next.backoffMs ?? schedule.baseMs,
        capMs: next.maxBackoffMs ?? schedule.capMs,
      }
      poster.setTimeoutMs(timeoutMs)
      // More slots may be free now.
      wake()
    },
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
      poster.close()
      await ticking
      await Promise.all(serving.values())
    },
  }
}
