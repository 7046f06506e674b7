/**
 * Metrics of `cyborg api` with several workers (api-cluster.ts): one answer for the whole API,
 * whichever worker a scrape reaches. The primary asks every ready worker for its registry over the
 * cluster's IPC channel (`getMetricsAsJSON`) and merges them with prom-client's
 * `AggregatorRegistry.aggregate`: counters and histograms are summed, and prom-client's process
 * metrics are merged as it declares (CPU seconds and heap summed, event-loop lag averaged, version
 * and start time taken once). The primary serves that on `[metrics] listen`; a worker's
 * `GET /metrics` on the API port asks the primary for the same text. A worker that does not answer
 * within 2 s is left out of that one scrape; a restarted worker's counters start again from 0, which
 * Prometheus's rate() reads as a counter reset.
 */
import cluster, { type Worker } from 'node:cluster'
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue } from 'prom-client'
import type { Registry } from 'prom-client'
import { errorMessage } from '../../domain/error-message.js'
import { OPENMETRICS, toOpenMetrics, wantsOpenMetrics } from './prometheus.js'

type Exposition = { contentType: string; body: string }
type Snapshot = MetricObjectWithValues<MetricValue<string>>[]

/** The messages between the primary and its workers; `type` tells them from cluster's own. */
type Message =
  | { type: 'cyborg:metrics-collect'; id: number }
  | { type: 'cyborg:metrics-collected'; id: number; metrics: Snapshot }
  | { type: 'cyborg:metrics-ask'; id: number; accept?: string | undefined }
  | ({ type: 'cyborg:metrics-answer'; id: number } & (Exposition | { error: string }))

const isMessage = (m: unknown): m is Message =>
  typeof m === 'object' &&
  m !== null &&
  String((m as { type?: unknown }).type).startsWith('cyborg:metrics-')

/** How long the primary waits for one worker's registry in one scrape. */
const COLLECT_TIMEOUT_MS = 2000
/** How long a worker waits for the primary's aggregate. */
const ASK_TIMEOUT_MS = 5000

/** Replies by id, each waited for with a deadline. */
class Pending<T> {
  #next = 0
  readonly #waiting = new Map<number, (value: T | undefined) => void>()

  /** Sends with a fresh id; resolves with the reply, or undefined after `timeoutMs`. */
  wait(send: (id: number) => void, timeoutMs: number): Promise<T | undefined> {
    const id = this.#next++
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.settle(id, undefined), timeoutMs)
      this.#waiting.set(id, (value) => {
        clearTimeout(timer)
        this.#waiting.delete(id)
        resolve(value)
      })
      try {
        send(id)
      } catch {
        this.settle(id, undefined) // the channel closed: that process is gone
      }
    })
  }

  settle(id: number, value: T | undefined): void {
    this.#waiting.get(id)?.(value)
  }
}

/** The primary's side: the aggregate of `workers()` (the ready ones), and answers to workers that ask for it. */
export function primaryMetrics(workers: () => readonly Worker[]): {
  expose(accept?: string): Promise<Exposition>
} {
  const collected = new Pending<Snapshot>()
  const expose = async (accept?: string): Promise<Exposition> => {
    const parts = await Promise.all(
      workers().map((w) =>
        collected.wait((id) => w.send({ type: 'cyborg:metrics-collect', id }), COLLECT_TIMEOUT_MS),
      ),
    )
    const registry = AggregatorRegistry.aggregate(parts.filter((p) => p !== undefined))
    const text = await registry.metrics()
    return wantsOpenMetrics(accept)
      ? { contentType: OPENMETRICS, body: toOpenMetrics(text) }
      : { contentType: registry.contentType, body: text }
  }
  cluster.on('message', (worker: Worker, message: unknown) => {
    if (!isMessage(message)) return
    if (message.type === 'cyborg:metrics-collected') collected.settle(message.id, message.metrics)
    if (message.type !== 'cyborg:metrics-ask') return
    const { id } = message
    const reply = (answer: Exposition | { error: string }) => {
      if (worker.isConnected()) worker.send({ type: 'cyborg:metrics-answer', id, ...answer })
    }
    expose(message.accept).then(reply, (err: unknown) => reply({ error: errorMessage(err) }))
  })
  return { expose }
}

/**
 * A worker's side: answers the primary's collect with `registry`, and returns the exposition of its
 * `GET /metrics`, which asks the primary for the aggregate.
 */
export function workerMetrics(registry: Registry): (accept?: string) => Promise<Exposition> {
  const answers = new Pending<Exposition | { error: string }>()
  process.on('message', (message: unknown) => {
    if (!isMessage(message)) return
    if (message.type === 'cyborg:metrics-answer') answers.settle(message.id, message)
    if (message.type !== 'cyborg:metrics-collect') return
    void registry
      .getMetricsAsJSON()
      .then((metrics) =>
        process.send?.({ type: 'cyborg:metrics-collected', id: message.id, metrics }),
      )
  })
  return async (accept) => {
    const answer = await answers.wait(
      (id) => process.send!({ type: 'cyborg:metrics-ask', id, accept }),
      ASK_TIMEOUT_MS,
    )
    if (answer === undefined)
      throw new Error(`the API's primary process did not answer within ${ASK_TIMEOUT_MS} ms`)
    if ('error' in answer) throw new Error(answer.error)
    return { contentType: answer.contentType, body: answer.body }
  }
}
