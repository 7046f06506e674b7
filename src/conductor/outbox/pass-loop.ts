/**
 * The pass loop of the outbox workers (the event relay, the custody sealer, the webhook
 * dispatcher): when a pass runs, never what it does.
 *
 * - A pass is batches (`batch`, under the worker's lock where it has one) until the first one
 *   shorter than `batchSize`; between batches the event loop gets its turn, so that a backlog on
 *   SQLite (whose calls are synchronous) never holds the API, RPCs or the agent of the process.
 * - One pass at a time: asked for while one runs, it runs once more after it (`again`), however
 *   many asked meanwhile. Wakes within `coalesceMs` of the first share one pass (coalescedWake).
 * - Polls every `pollIntervalMs` for work nobody woke it for: with `hasWork` (one indexed read)
 *   only when idle, without it by asking for a pass.
 * - A failed batch ends its pass and is logged; with `retry` it also holds every pass back until
 *   a retry `initialMs` later, doubled after each failure in a row up to `maxMs`.
 * - `stop()` stops the timers, drops a pending wake, waits for the pass in flight and, with
 *   `lastPass`, runs one more unless batches are failing.
 */
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { Logger } from '../../domain/logger.js'
import { coalescedWake } from './wake-on-write.js'

export interface PassLoopOptions {
  /** A pass ends with the first batch shorter than this. @default Infinity (one batch a pass) */
  batchSize?: number
  /** Wakes this close together share a pass (0: the same turn); undefined: a wake asks at once. */
  coalesceMs?: number | undefined
  /** How often to look for work nobody woke the loop for. */
  pollIntervalMs: number
  /** Back-off after a failed batch; without it the next wake or poll retries. */
  retry?: { initialMs: number; maxMs: number } | undefined
  /** Whether `stop()` ends with one last pass (skipped while batches are failing). @default false */
  lastPass?: boolean
}

/** What the loop logs, in the worker's words. */
export interface PassLoopMessages {
  /** A batch failed (with `err`; with `retry`, also `failures` and `retryInMs`). */
  failed: string
  /** With `retry`: a batch failed while stopping (nothing is retried until the next start). */
  failedStopping?: string
  /** With `retry`: a batch got through after failures. */
  recovered?: string
  /** The poll's `hasWork` failed. */
  pollFailed?: string
}

/** Periodic work beside the passes (purges, pruning), from `start()` to `stop()`. */
export interface Chore {
  intervalMs: number
  run(): Promise<unknown>
}

export interface PassLoopDeps {
  /** One batch: how many rows it did, undefined when another worker holds the lock. */
  batch(): Promise<number | undefined>
  /** Whether there is work (the poll). */
  hasWork?: (() => Promise<boolean>) | undefined
  chores?: readonly Chore[]
  log: Logger
  messages: PassLoopMessages
}

export interface PassLoop {
  /**
   * Polls (and runs the chores) from now on; the first poll is one `pollIntervalMs` away. False
   * when it had started already or is stopped.
   */
  start(): boolean
  /** Asks for a pass, coalesced; nothing once stopped or while a retry is pending. */
  wake(): void
  /** A pass now, or once more after the one in flight (resolving with the one in flight). */
  run(): Promise<number>
  /** Waits for the pass in flight, then runs one; resolves with the rows it did. */
  drain(): Promise<number>
  /** Resolves once no pass is in flight. */
  settled(): Promise<void>
  stopped(): boolean
  stop(): Promise<void>
}

interface LoopState {
  deps: PassLoopDeps
  options: PassLoopOptions
  inFlight: Promise<number> | undefined
  again: boolean
  stopped: boolean
  /** Failed batches in a row (counted with `retry` only). */
  failures: number
  retryTimer: NodeJS.Timeout | undefined
  timers: NodeJS.Timeout[]
}

/** A failed batch: logged, and with `retry` the next pass waits for the back-off. */
function batchFailed(s: LoopState, err: unknown) {
  const { log, messages } = s.deps
  const retry = s.options.retry
  if (!retry) {
    log.warn({ err }, messages.failed)
    return
  }
  s.failures++
  if (s.stopped) {
    log.warn({ err, failures: s.failures }, messages.failedStopping ?? messages.failed)
    return
  }
  const waitMs = Math.min(retry.maxMs, retry.initialMs * 2 ** Math.min(s.failures - 1, 20))
  log.warn({ err, failures: s.failures, retryInMs: waitMs }, messages.failed)
  clearTimeout(s.retryTimer)
  s.retryTimer = setTimeout(() => {
    s.retryTimer = undefined
    if (!s.stopped) void runPass(s)
  }, waitMs)
  s.retryTimer.unref()
}

/** Batches until a short one; a failure ends the pass. Resolves with the rows done. */
async function pass(s: LoopState): Promise<number> {
  const { batchSize = Infinity } = s.options
  let done = 0
  for (;;) {
    let n: number | undefined
    try {
      n = await s.deps.batch()
    } catch (err) {
      batchFailed(s, err)
      return done
    }
    if (s.failures > 0 && n !== undefined)
      s.deps.log.info({ failures: s.failures }, s.deps.messages.recovered ?? 'works again')
    if (n !== undefined) s.failures = 0
    if (!n) return done
    done += n
    // A short batch read every row committed when it read: a later commit wakes a pass of its
    // own (`again`), so another read now would find nothing (one transaction saved a pass).
    if (n < batchSize) return done
    // Bounded work per batch, and the event loop's turn between batches (API reads, RPCs).
    await nextTurn()
  }
}

/** Runs a pass now, or once the one in flight ends. */
function runPass(s: LoopState): Promise<number> {
  if (s.inFlight) {
    s.again = true
    return s.inFlight
  }
  const current = pass(s).finally(() => {
    s.inFlight = undefined
    if (s.again && !s.stopped && s.retryTimer === undefined) {
      s.again = false
      void runPass(s)
    }
  })
  s.inFlight = current
  return current
}

async function poll(s: LoopState, wake: () => void) {
  const { hasWork, log, messages } = s.deps
  if (!hasWork) {
    wake()
    return
  }
  if (s.inFlight || s.retryTimer !== undefined) return
  try {
    if (await hasWork()) await runPass(s)
  } catch (err) {
    log.warn({ err }, messages.pollFailed ?? 'poll failed; next poll retries')
  }
}

async function settled(s: LoopState) {
  while (s.inFlight) await s.inFlight
}

export function createPassLoop(deps: PassLoopDeps, options: PassLoopOptions): PassLoop {
  const s: LoopState = {
    deps,
    options,
    inFlight: undefined,
    again: false,
    stopped: false,
    failures: 0,
    retryTimer: undefined,
    timers: [],
  }
  const idle = () => !s.stopped && s.retryTimer === undefined
  const coalesced =
    options.coalesceMs === undefined
      ? undefined
      : coalescedWake(() => {
          if (idle()) void runPass(s)
        }, options.coalesceMs)
  const wake = () => {
    if (!idle()) return
    if (coalesced) coalesced.wake()
    else void runPass(s)
  }
  return {
    start() {
      if (s.stopped || s.timers.length > 0) return false
      const every = [{ intervalMs: options.pollIntervalMs, run: () => poll(s, wake) }]
      for (const chore of [...every, ...(deps.chores ?? [])]) {
        const timer = setInterval(() => void chore.run(), chore.intervalMs)
        timer.unref()
        s.timers.push(timer)
      }
      return true
    },
    wake,
    run: () => runPass(s),
    async drain() {
      if (s.inFlight) await s.inFlight
      return runPass(s)
    },
    settled: () => settled(s),
    stopped: () => s.stopped,
    async stop() {
      s.stopped = true
      for (const timer of s.timers) clearInterval(timer)
      clearTimeout(s.retryTimer)
      coalesced?.cancel()
      s.retryTimer = undefined
      s.again = false
      await settled(s)
      if (options.lastPass && s.failures === 0) await pass(s)
    },
  }
}

/**
 * A purge: up to `rounds` deletes of at most 1000 rows each (`round` resolves with how many it
 * deleted; undefined when another worker holds the lock), the event loop's turn between them.
 */
export async function boundedRounds(
  round: () => Promise<number | undefined>,
  rounds = 20,
): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    const n = await round()
    if (n === undefined || n < 1000) break
    await nextTurn()
  }
}
