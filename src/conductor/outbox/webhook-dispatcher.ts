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
import type { DatabaseHandle } from '../../db/core/connection.js'
import { claimDueWebhooks, releaseWebhookClaim } from '../../db/outbox/webhook-claims.js'
import { deleteDeliveredBefore } from '../../db/outbox/webhook-deliveries.js'
import { newUuid } from '../../domain/ids.js'
import type { Logger } from '../../domain/logger.js'
import { formatTimestamp, type Clock } from '../../domain/time.js'
import { webhookSigner, type WebhookSigner } from '../../domain/webhooks/webhook-signature.js'
import { boundedRounds, createPassLoop } from './pass-loop.js'
import { createWebhookPoster } from './webhook-post.js'
import { serveTurn, type TurnDeps, type TurnSettings } from './webhook-turn.js'

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

const at = (ms: number) => formatTimestamp(new Date(ms))

/**
 * The turn settings of `options`; those it leaves out keep their `current` value (`reconfigure`),
 * or their default. The lease defaults to `leaseMs` of the first options, else 2 × timeout + 5 s.
 */
function turnSettings(
  options: WebhookDispatcherOptions,
  current?: TurnSettings,
  firstLeaseMs?: number,
): TurnSettings {
  const timeoutMs = options.timeoutMs ?? current?.timeoutMs ?? 10_000
  return {
    timeoutMs,
    maxInFlight: options.maxInFlight ?? current?.maxInFlight ?? 64,
    maxAttempts: options.maxAttempts ?? current?.maxAttempts ?? 8,
    turnSize: options.turnSize ?? current?.turnSize ?? 400,
    leaseMs: options.leaseMs ?? firstLeaseMs ?? 2 * timeoutMs + 5000,
    schedule: {
      baseMs: options.backoffMs ?? current?.schedule.baseMs ?? 1000,
      capMs: options.maxBackoffMs ?? current?.schedule.capMs ?? 300_000,
    },
  }
}

/** Claims what free slots allow and starts serving it; `serving` holds the turns under way. */
async function claimRound(
  turn: TurnDeps,
  serving: Map<number, Promise<void>>,
  concurrency: number,
  uuid: () => string,
  wake: () => void,
) {
  const { db, log, clock, settings } = turn
  const free = concurrency - serving.size
  if (turn.stopped() || free <= 0) return
  const token = uuid()
  const now = clock.now().getTime()
  const until = now + settings.leaseMs
  const claimed = await claimDueWebhooks(db, {
    token,
    now: at(now),
    until: at(until),
    limit: free,
  })
  for (const w of claimed) {
    const run = serveTurn(turn, w, token, until)
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

/** Deletes delivered rows past their retention, in bounded rounds. */
async function purgeDelivered(db: DatabaseHandle, log: Logger, cutoff: string) {
  try {
    await boundedRounds(() => deleteDeliveredBefore(db.db, cutoff))
  } catch (err) {
    log.warn({ err }, 'could not delete old webhook deliveries; next purge retries')
  }
}

export function createWebhookDispatcher(
  deps: WebhookDispatcherDeps,
  options: WebhookDispatcherOptions = {},
): WebhookDispatcher {
  const { db, clock, uuid = newUuid, random = Math.random } = deps
  const log = deps.log.child({ component: 'webhook-dispatcher' })
  const { pollIntervalMs = 1000, purgeIntervalMs = 600_000 } = options
  // `let` and a mutable `settings`: reconfigure() replaces them; every use reads them when it runs.
  let { concurrency = 8, retentionHours = 24 } = options
  const settings = turnSettings(options)
  const poster = createWebhookPoster(settings.timeoutMs)
  /** Endpoints (row ids) this dispatcher is serving, and their runs. */
  const serving = new Map<number, Promise<void>>()
  let dueTimer: { at: number; timer: NodeJS.Timeout } | undefined
  /** Signers by endpoint secret (a secret's key is prepared once). */
  const signers = new Map<string, WebhookSigner>()
  const turn: TurnDeps = {
    ...{ db, log, clock, random, poster, settings },
    signerOf(secret) {
      let signer = signers.get(secret)
      if (!signer) signers.set(secret, (signer = webhookSigner(secret)))
      return signer
    },
    stopped: () => loop.stopped(),
    /** Wakes again when the earliest backoff ends (the poll would find it too, later). */
    wakeAt(when) {
      const ms = Date.parse(when)
      if (loop.stopped() || (dueTimer && dueTimer.at <= ms)) return
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
    },
  }
  const wake = () => loop.wake()
  const loop = createPassLoop(
    {
      batch: async () => {
        await claimRound(turn, serving, concurrency, uuid, wake)
        return 0
      },
      chores: [
        {
          intervalMs: purgeIntervalMs,
          run: () =>
            purgeDelivered(db, log, at(clock.now().getTime() - retentionHours * 3_600_000)),
        },
      ],
      log,
      messages: { failed: 'could not claim webhooks; next poll retries' },
    },
    { pollIntervalMs },
  )

  return {
    start() {
      if (loop.start()) wake()
    },
    wake,
    reconfigure(next: WebhookDispatcherOptions) {
      concurrency = next.concurrency ?? concurrency
      retentionHours = next.retentionHours ?? retentionHours
      Object.assign(settings, turnSettings(next, settings, options.leaseMs))
      poster.setTimeoutMs(settings.timeoutMs)
      // More slots may be free now.
      wake()
    },
    async idle() {
      for (;;) {
        await loop.run()
        await loop.settled()
        if (serving.size === 0) return
        await Promise.all(serving.values())
      }
    },
    async stop() {
      const stopping = loop.stop()
      clearTimeout(dueTimer?.timer)
      poster.close()
      await stopping
      await Promise.all(serving.values())
    },
  }
}
