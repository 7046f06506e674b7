/**
 * A probe for /healthcheck: an async read that is reused for a short while, bounded in time, and
 * never run twice at once. So a burst of polls costs one read, and a read that hangs (a database
 * that stopped answering) makes the check fail after `timeoutMs` instead of hanging it, without
 * piling up more reads behind the hung one.
 */
import { rawErrorMessage } from '../domain/error-message.js'

const TIMED_OUT = Symbol('timed out')

/** What one probe found: the read's value and how long it took, or why it failed. */
export type ProbeOutcome<T> = { ok: true; value: T; ms: number } | { ok: false; error: string }

export interface ProbeOptions {
  /** An outcome is reused this long after it was found. @default 1000 */
  cacheMs?: number
  /** A read that has not answered within this long fails the probe. @default 2000 */
  timeoutMs?: number
  /** The clock of the cache (ms). @default Date.now */
  now?: () => number
}

export interface Probe<T> {
  /** The cached outcome, or a new one (at most `timeoutMs` away); never rejects. */
  get(): Promise<ProbeOutcome<T>>
}

/** Wraps `read` (which may reject or never settle) into a {@link Probe}. */
export function createProbe<T>(read: () => Promise<T>, options: ProbeOptions = {}): Probe<T> {
  const { cacheMs = 1000, timeoutMs = 2000, now = Date.now } = options
  let last: { at: number; outcome: ProbeOutcome<T> } | undefined
  /** The probe being awaited: every caller during it shares it. */
  let pending: Promise<ProbeOutcome<T>> | undefined
  /** The read itself, until it settles: may outlive a timed-out probe, and is then reused. */
  let running: { started: number; read: Promise<T> } | undefined

  const startRead = () => {
    if (running) return running
    const started = now()
    const current = { started, read: Promise.resolve().then(read) }
    running = current
    const clear = () => {
      if (running === current) running = undefined
    }
    current.read.then(clear, clear)
    return current
  }

  const probe = async (): Promise<ProbeOutcome<T>> => {
    const begun = now()
    const { started, read: result } = startRead()
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
      timer = setTimeout(() => resolve(TIMED_OUT), timeoutMs)
    })
    let outcome: ProbeOutcome<T>
    try {
      const value = await Promise.race([result, timeout])
      outcome =
        value === TIMED_OUT
          ? { ok: false, error: noAnswer(timeoutMs, begun - started) }
          : { ok: true, value, ms: now() - started }
    } catch (err) {
      outcome = { ok: false, error: rawErrorMessage(err) }
    } finally {
      clearTimeout(timer)
    }
    last = { at: now(), outcome }
    return outcome
  }

  return {
    get() {
      if (last && now() - last.at < cacheMs) return Promise.resolve(last.outcome)
      pending ??= probe().finally(() => {
        pending = undefined
      })
      return pending
    },
  }
}

/** `no answer within 2000 ms`, naming how long an earlier read has been waiting when it is reused. */
function noAnswer(timeoutMs: number, waitedBeforeMs: number): string {
  const text = `no answer within ${timeoutMs} ms`
  if (waitedBeforeMs <= 0) return text
  return `${text} (the read has been waiting ${Math.round((waitedBeforeMs + timeoutMs) / 1000)} s)`
}
