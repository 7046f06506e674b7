/**
 * Sends one batch of an endpoint's queued deliveries through a sliding window
 * (docs/webhooks.md, Order): up to `maxInFlight` posts at once, each the first unsent delivery of
 * its resource, started in queue order as slots free up (src/domain/webhooks/webhook-window.ts). A failed
 * or aborted attempt stops new starts; the batch ends once nothing is in flight.
 */
import type { PendingDelivery } from '../../db/outbox/webhook-deliveries.js'
import { nextRun } from '../../domain/webhooks/webhook-window.js'
import type { PostResult } from './webhook-post.js'

/** A delivery read from the queue, with the resource it is about. */
export interface Queued {
  d: PendingDelivery
  resource: string
}

export interface BatchOutcome {
  /** The deliveries answered 2xx. */
  delivered: { deliveryId: number; status: number }[]
  /** The failed attempts. */
  failed: { d: PendingDelivery; result: PostResult }[]
  /** Posts the dispatcher's stop aborted (not attempts). */
  aborted: boolean
  /** Deliveries of the batch not attempted (stopped after a failure, or by `mayStart`). */
  unsent: number
}

export interface BatchOptions {
  maxInFlight: number
  /** One attempt. */
  post: (q: Queued) => Promise<PostResult>
  /** Checked before each start: false stops new starts (the claim was lost, or stopping). */
  mayStart?: () => boolean
}

export function sendBatch(queue: readonly Queued[], options: BatchOptions): Promise<BatchOutcome> {
  const { maxInFlight, post, mayStart = () => true } = options
  const outcome: BatchOutcome = { delivered: [], failed: [], aborted: false, unsent: 0 }
  const inFlight = new Set<string>()
  let waiting = queue
  let halted = false
  return new Promise((resolve) => {
    const pump = () => {
      if (!halted && mayStart()) {
        const free = maxInFlight - inFlight.size
        const run = free > 0 ? nextRun(waiting, free, inFlight) : []
        if (run.length > 0) {
          const started = new Set(run)
          waiting = waiting.filter((q) => !started.has(q))
        }
        for (const q of run) {
          inFlight.add(q.resource)
          const attempt = post(q).catch((err: unknown): PostResult => ({
            status: null,
            error: `not sent: ${String(err)}`,
          }))
          void attempt.then((result) => {
            inFlight.delete(q.resource)
            if (result.aborted) outcome.aborted = true
            else if (result.error === null)
              outcome.delivered.push({ deliveryId: q.d.id, status: result.status! })
            else outcome.failed.push({ d: q.d, result })
            if (result.error !== null) halted = true
            pump()
          })
        }
      }
      if (inFlight.size === 0) {
        outcome.unsent = waiting.length
        resolve(outcome)
      }
    }
    pump()
  })
}
