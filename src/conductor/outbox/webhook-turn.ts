/**
 * One endpoint's turn in the webhook dispatcher (webhook-dispatcher.ts): under the claim it holds,
 * send the endpoint's due deliveries a batch at a time, record the outcomes, back it off after a
 * failure, and let it go. Module functions over `TurnDeps`; the dispatcher owns the settings
 * (`reconfigure` changes them: each use reads them when it runs).
 */
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { DatabaseHandle } from '../../db/core/connection.js'
import {
  recordAttempts,
  recordDelivered,
  releaseWebhookClaim,
  updateWebhookClaim,
  type AttemptOutcome,
  type ClaimedWebhook,
} from '../../db/outbox/webhook-claims.js'
import { listPendingDeliveries, type PendingDelivery } from '../../db/outbox/webhook-deliveries.js'
import type { Logger } from '../../domain/logger.js'
import { formatTimestamp, type Clock } from '../../domain/time.js'
import type { WebhookSigner } from '../../domain/webhooks/webhook-signature.js'
import { deliveryResource } from '../../domain/webhooks/webhook-window.js'
import { DeliveryState, retryDelayMs, type RetrySchedule } from '../../domain/webhooks/webhooks.js'
import type { PostResult, WebhookPoster } from './webhook-post.js'
import { sendBatch } from './webhook-sender.js'

/** Deliveries read at a time, and successes recorded together. */
const BATCH = 200

/** The `[webhooks]` settings a turn reads (the dispatcher's, changed by `reconfigure`). */
export interface TurnSettings {
  timeoutMs: number
  maxInFlight: number
  maxAttempts: number
  turnSize: number
  leaseMs: number
  schedule: RetrySchedule
}

export interface TurnDeps {
  db: DatabaseHandle
  log: Logger
  clock: Clock
  /** Draws of the jitter, in [0, 1). */
  random: () => number
  poster: WebhookPoster
  settings: TurnSettings
  signerOf(secret: string): WebhookSigner
  /** Whether the dispatcher is stopping: no post starts any more. */
  stopped(): boolean
  /** Wakes the dispatcher when a backoff ends. */
  wakeAt(when: string): void
}

/** A failed attempt, and what it makes of its delivery. */
interface Failure {
  d: PendingDelivery
  result: PostResult
  outcome: AttemptOutcome
}

const at = (ms: number) => formatTimestamp(new Date(ms))

/** The outcome of a failed attempt: retry later, or dead. */
export function failureOf(deps: TurnDeps, result: PostResult, attempts: number): AttemptOutcome {
  const now = deps.clock.now().getTime()
  const base = { attempts, at: at(now), status: result.status, error: result.error }
  if (attempts >= deps.settings.maxAttempts)
    return { ...base, state: DeliveryState.Dead, nextAttemptAt: at(now) }
  const next = at(now + retryDelayMs(attempts, deps.settings.schedule, deps.random))
  return { ...base, state: DeliveryState.Pending, nextAttemptAt: next }
}

/**
 * Records the failed attempts of a run in one transaction (at most the window's), and backs the
 * endpoint off: until its oldest failed delivery's retry, or now when that one went dead (the
 * receiver still fails: the next turn probes with one delivery). Resolves with when the
 * endpoint is due again, or false if the claim was lost.
 */
async function recordFailures(
  deps: TurnDeps,
  w: ClaimedWebhook,
  token: string,
  failed: readonly Failure[],
) {
  const { db, log } = deps
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

/** Records a batch's successes; resolves false if the claim was lost. */
async function flush(
  deps: TurnDeps,
  w: ClaimedWebhook,
  token: string,
  delivered: readonly { deliveryId: number; status: number }[],
) {
  if (delivered.length === 0) return true
  const finishedAt = at(deps.clock.now().getTime())
  const ok = await recordDelivered(deps.db.db, { webhookId: w.id, token }, delivered, finishedAt)
  if (!ok) deps.log.warn({ webhook: w.uuid }, 'lost the claim on a webhook mid-send')
  return ok
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
export async function serveTurn(
  deps: TurnDeps,
  w: ClaimedWebhook,
  token: string,
  leaseEnd: number,
): Promise<void> {
  const { db, log, clock, settings, poster } = deps
  const sign = deps.signerOf(w.secret)
  let sent = 0
  let lost = false
  let renewing: Promise<void> | undefined
  const renew = () => {
    renewing ??= updateWebhookClaim(
      db.db,
      w.id,
      token,
      at(clock.now().getTime() + settings.leaseMs),
    )
      .then((held) => {
        if (!held) lost = true
      })
      .catch((err: unknown) => log.warn({ err, webhook: w.uuid }, 'could not renew a claim'))
      .finally(() => (renewing = undefined))
  }
  let until = leaseEnd
  const renewer = setInterval(
    () => {
      until = clock.now().getTime() + settings.leaseMs
      renew()
    },
    Math.max(10, settings.leaseMs / 3),
  )
  renewer.unref()
  let probing = w.backingOff
  try {
    while (sent < settings.turnSize && !deps.stopped() && !lost) {
      if (sent > 0) await nextTurn()
      const rows = probing ? 1 : Math.min(BATCH, settings.turnSize - sent)
      const batch = await listPendingDeliveries(db.db, w.id, rows)
      if (batch.length === 0) break
      // Every delivery is due: the endpoint's backoff (`retry_at`, checked by the claim) is
      // what holds its queue back, so a turn never waits on one not yet due.
      const queue = batch.map((d) => ({ d, resource: deliveryResource(d.body) }))
      if (until - clock.now().getTime() < settings.timeoutMs + 5000) {
        until = clock.now().getTime() + settings.leaseMs
        if (!(await updateWebhookClaim(db.db, w.id, token, at(until)))) return
      }
      const outcome = await sendBatch(queue, {
        maxInFlight: probing ? 1 : settings.maxInFlight,
        post: ({ d }) => poster.post(w.url, sign(d.eventUuid, clock.now(), d.body), d.body),
        mayStart: () => !deps.stopped() && !lost,
      })
      await renewing
      sent += outcome.delivered.length + outcome.failed.length
      if (lost) return log.warn({ webhook: w.uuid }, 'lost the claim on a webhook mid-send')
      const failed = outcome.failed.map(({ d, result }) => ({
        d,
        result,
        outcome: failureOf(deps, result, d.attempts + 1),
      }))
      if (!(await flush(deps, w, token, outcome.delivered))) return
      if (outcome.delivered.length > 0) probing = false
      if (failed.length > 0) {
        const due = await recordFailures(deps, w, token, failed)
        if (due === false) return
        deps.wakeAt(due)
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
