/**
 * Heartbeat coalescing (issue 15): 10,000 agents beating every 10 s are 1,000 heartbeats a second,
 * and one conductor must record them in far fewer statements than that. Heartbeats that arrive
 * together are written by one statement (updateHeartbeats in src/db/service-rows.ts): an UPDATE of
 * last_seen for every beat whose row exists with its version and, for a beat carrying its
 * inventory hash, that hash, checked in the same statement. The rare beats it cannot settle (first
 * sight, a new version, a hash that differs or was nulled by the lease sweep meanwhile) are then
 * written one by one as before (updateHeartbeat through the group committer), so each caller gets
 * its own answer, and `inventoryCurrent: true` only when the stored hash was its hash at the very
 * moment its last_seen was written.
 *
 * The batch statement runs on its own, outside the group committer: a single UPDATE is atomic by
 * itself, it is safe to run again, and an unknown outcome costs nothing (the agent beats again next
 * period), so the committer's BEGIN, savepoint, commit marker and COMMIT would only add statements.
 * It also never waits for the committer's batch in flight (nor that batch for it).
 *
 * When to write (the window): waiting pays only under load. The batcher keeps a decaying estimate
 * of the arrival rate; when fewer than COMPANY more beats are expected within `windowMs`, a beat is
 * written on the next turn of the event loop (beats of the same turn still share the statement),
 * so a lone heartbeat does not wait. Under load the first beat of a batch waits at most `windowMs`
 * (default 20 ms; a heartbeat comes every 10 s and its RPC times out after tens of seconds, so
 * 20 ms is nothing to its caller), or less when `maxBatch` (32) beats are waiting. 20 ms at 1,000
 * beats/s is about 20 beats per statement, 0.05 statements per heartbeat; at higher rates batches
 * fill to 32 before the window ends. Why 32: the bus lets at most its prefetch (64) requests into
 * the conductor at once, and each waits here until its batch is written, so a batch can never grow
 * past 64 and waiting for one that large would cap the rate at 64 per window. Up to `concurrency`
 * (2) batch statements run at once; beats arriving meanwhile form the next batch.
 *
 * A failing batch statement (after a few tries on lock conflicts) fails every caller of its batch;
 * the agents beat again next period.
 */
import type { DatabaseHandle } from '../db/core/connection.js'
import type { GroupCommitter } from '../db/core/group-commit.js'
import { isTransientLockError } from '../db/core/errors.js'
import {
  MAX_BEATS_PER_STATEMENT,
  updateHeartbeat,
  updateHeartbeats,
  type Beat,
} from '../db/service-rows.js'
import { UnavailableError } from '../domain/errors.js'

export interface HeartbeatBatchOptions {
  /** Under load, how long the first beat of a batch waits for company. @default 20 */
  windowMs?: number
  /** A batch is written at once when this many beats wait (at most 256; see above). @default 32 */
  maxBatch?: number
  /** Batch statements in flight at once, each on its own pooled connection. @default 2 */
  concurrency?: number
}

export interface HeartbeatBatchDeps {
  /** Where the batch statement runs, as a statement of its own (not inside a transaction). */
  db: DatabaseHandle
  /** For the beats the batch statement did not settle: each is one write of the group committer. */
  committer: Pick<GroupCommitter, 'run'>
  now: () => string
}

export interface HeartbeatBatcher {
  /**
   * Records a heartbeat; resolves with true when `beat.reportHash` is given and was the stored
   * report hash when last_seen was written (the inventory is current), else false.
   * Rejects with the database's error, or UnavailableError once closed.
   */
  beat(beat: Beat): Promise<boolean>
  /** Writes what is waiting, then refuses more with UnavailableError. */
  close(): Promise<void>
  /** Batch statements run, beats in them, and beats written alone afterwards. */
  stats(): { batches: number; beats: number; alone: number }
}

/** More beats expected within the window than this: wait for them. */
const COMPANY = 2
/** Time constant of the arrival-rate estimate. */
const RATE_TAU_MS = 1000
/** Tries of a batch statement that lost a lock race (deadlock, lock timeout). */
const MAX_ATTEMPTS = 3

interface Pending {
  beat: Beat
  /** When it arrived (performance.now()). */
  at: number
  resolve(current: boolean): void
  reject(err: unknown): void
}

export function createHeartbeatBatcher(
  deps: HeartbeatBatchDeps,
  options: HeartbeatBatchOptions = {},
): HeartbeatBatcher {
  const windowMs = Math.max(0, options.windowMs ?? 20)
  const maxBatch = Math.min(
    MAX_BEATS_PER_STATEMENT,
    Math.max(1, Math.floor(options.maxBatch ?? 32)),
  )
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? 2))
  const queue: Pending[] = []
  let timer: NodeJS.Timeout | NodeJS.Immediate | undefined
  let timerIsImmediate = false
  /** Batches being written. */
  const inFlight = new Set<Promise<void>>()
  let closed = false
  /** Arrivals per ms, decaying with RATE_TAU_MS. */
  let rate = 0
  let lastArrival = performance.now()
  let batches = 0
  let beats = 0
  let alone = 0

  const clearTimer = () => {
    if (timer === undefined) return
    if (timerIsImmediate) clearImmediate(timer as NodeJS.Immediate)
    else clearTimeout(timer as NodeJS.Timeout)
    timer = undefined
  }

  const flush = () => {
    clearTimer()
    if (inFlight.size >= concurrency || queue.length === 0) return
    const batch = queue.splice(0, maxBatch)
    const writing: Promise<void> = write(batch).finally(() => {
      inFlight.delete(writing)
      if (queue.length > 0) schedule()
    })
    inFlight.add(writing)
  }

  const schedule = () => {
    if (queue.length >= maxBatch || closed) return flush()
    if (timer !== undefined || inFlight.size >= concurrency) return
    const waitMs = rate * windowMs >= COMPANY ? queue[0]!.at + windowMs - performance.now() : 0
    timerIsImmediate = waitMs <= 0
    timer = timerIsImmediate ? setImmediate(flush) : setTimeout(flush, waitMs)
  }

  /** Writes one batch; settles every caller of it. Never rejects. */
  const write = async (batch: Pending[]): Promise<void> => {
    const now = deps.now()
    // Each (host, binary) once per statement: a second beat of the same agent is written alone.
    const keys = new Set<string>()
    const first: Pending[] = []
    const later: Pending[] = []
    for (const p of batch) {
      const key = `${p.beat.binary}\n${p.beat.host}`
      ;(keys.has(key) ? later : first).push(p)
      keys.add(key)
    }
    batches++
    beats += first.length
    let settled: boolean[]
    try {
      settled = await statement(
        first.map((p) => p.beat),
        now,
      )
    } catch (err) {
      for (const p of batch) p.reject(err)
      return
    }
    first.forEach((p, i) => {
      if (settled[i]) p.resolve(p.beat.reportHash !== undefined)
      else later.push(p)
    })
    alone += later.length
    await Promise.all(
      later.map(({ beat, resolve, reject }) =>
        deps.committer
          .run((trx) => updateHeartbeat(trx, beat, now, beat.reportHash))
          .then(resolve, reject),
      ),
    )
  }

  const statement = async (list: Beat[], now: string): Promise<boolean[]> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await updateHeartbeats(deps.db.db, list, now)
      } catch (err) {
        if (!isTransientLockError(err) || attempt >= MAX_ATTEMPTS) throw err
        await new Promise((r) => setTimeout(r, 5 * attempt + Math.random() * 10))
      }
    }
  }

  return {
    beat(beat) {
      if (closed) return Promise.reject(new UnavailableError('heartbeat batcher is closed'))
      const at = performance.now()
      rate = rate * Math.exp((lastArrival - at) / RATE_TAU_MS) + 1 / RATE_TAU_MS
      lastArrival = at
      return new Promise<boolean>((resolve, reject) => {
        queue.push({ beat, at, resolve, reject })
        schedule()
      })
    },
    async close() {
      closed = true
      while (inFlight.size > 0 || queue.length > 0) {
        flush()
        await Promise.all(inFlight)
      }
    },
    stats: () => ({ batches, beats, alone }),
  }
}
