/**
 * A full garbage collection when the API process falls idle (issue 28). V8 lets the old generation
 * fill with garbage between its major GCs and keeps the pages: a `cyborg api` held 110–176 MB of
 * RSS for 30 s and more after 1,000 GETs, against about 100 MB at ready (docs/performance.md,
 * "Footprint, fourth pass (issue 28)"). bin/cyborg starts the API with `--expose-gc`; every
 * `checkMs` this looks at the event loop's utilization since its last look and at V8's committed
 * heap, and when the process was idle, the heap grew by `growthBytes` since the last collection and
 * enough time has passed since it, runs one full GC that gives the freed pages back (V8's
 * last-resort flavour). Enough: `minGapMs`, or `costFactor` times what the last one took, if more,
 * so that these GCs take at most 1/`costFactor` of a core. It never runs under load (the loop is
 * then busy).
 * Without `--expose-gc` (the sources under tsx, tests) it does nothing.
 */
import { performance, type EventLoopUtilization } from 'node:perf_hooks'
import { getHeapStatistics } from 'node:v8'

export interface IdleGcOptions {
  /** How often to look, ms. @default 5000 */
  checkMs: number
  /** The event loop's utilization (0–1) since the last look under which the process is idle. @default 0.05 */
  idleBelow: number
  /** How much the committed heap must have grown over the live heap the last collection left. @default 8 MiB */
  growthBytes: number
  /** The least time between two collections, ms. @default 10000 */
  minGapMs: number
  /** The gap after a collection is at least this many times what it took. @default 50 */
  costFactor: number
}

export const IDLE_GC_DEFAULTS: IdleGcOptions = {
  checkMs: 5_000,
  idleBelow: 0.05,
  growthBytes: 8 * 2 ** 20,
  minGapMs: 10_000,
  costFactor: 50,
}

/** One look at the process. */
export interface IdleGcLook {
  /** The event loop's utilization (0–1) since the last look. */
  utilization: number
  /** V8's committed heap now (`total_heap_size`). */
  committedBytes: number
  /** The time now, ms (`performance.now()`). */
  now: number
}

/** What the last collection left. */
export interface IdleGcState {
  /** The heap in use after it (at start: when the collector started). */
  liveBytes: number
  /** When it ran, ms (`performance.now()`; none yet: -Infinity). */
  at: number
  /** What it took, ms. */
  tookMs: number
}

/** Whether this look collects. */
export function shouldCollect(look: IdleGcLook, last: IdleGcState, o: IdleGcOptions): boolean {
  return (
    look.utilization < o.idleBelow &&
    look.committedBytes >= last.liveBytes + o.growthBytes &&
    look.now - last.at >= Math.max(o.minGapMs, o.costFactor * last.tookMs)
  )
}

/** Starts looking; the returned function stops. `gc` is Node's `--expose-gc` function, if any. */
export function startIdleGc(
  options: IdleGcOptions = IDLE_GC_DEFAULTS,
  gc: NodeJS.GCFunction | undefined = globalThis.gc,
): () => Promise<void> {
  if (gc === undefined) return () => Promise.resolve()
  const last: IdleGcState = {
    liveBytes: getHeapStatistics().used_heap_size,
    at: -Infinity,
    tookMs: 0,
  }
  let loop: EventLoopUtilization = performance.eventLoopUtilization()
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization()
    const look = {
      utilization: performance.eventLoopUtilization(now, loop).utilization,
      committedBytes: getHeapStatistics().total_heap_size,
      now: performance.now(),
    }
    loop = now
    if (!shouldCollect(look, last, options)) return
    gc({ type: 'major', execution: 'sync', flavor: 'last-resort' })
    last.liveBytes = getHeapStatistics().used_heap_size
    last.at = performance.now()
    last.tookMs = last.at - look.now
  }, options.checkMs)
  timer.unref()
  return () => {
    clearInterval(timer)
    return Promise.resolve()
  }
}
