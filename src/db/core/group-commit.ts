/**
 * Group commit, the conductor's "save out rate" (seed 002): concurrent writes that arrive within one
 * tick share one transaction, so N callers cost one COMMIT (one fsync) instead of N.
 *
 * Each operation runs in its own savepoint (a batch of one, in a plain transaction): a failing one
 * is rolled back alone and its caller gets its own error, while the others commit.
 *
 * A failed COMMIT does not say whether the transaction committed: the answer may be lost after the
 * server committed. So an operation never runs twice unless its transaction is known to have rolled
 * back. Each transaction writes a commit marker (src/db/core/commit-markers.ts) as its last statement, and
 * after a failed COMMIT the marker tells the outcome:
 * - committed: each caller gets the value its run returned;
 * - rolled back: a batch's operations run again, each alone in its own transaction, so every caller
 *   still gets its own result or error (a batch of one gets the COMMIT's error, as before);
 * - unknown (the database cannot be asked): each caller gets an UnavailableError saying that the
 *   write may have landed, and nothing runs again.
 * SQLite writes no marker: it runs in this process, so a failed COMMIT there did not commit.
 * Operations therefore need only be safe to run again after a rollback, which any plain DB write is,
 * even one that makes its ids inside.
 * One batch is in flight per committer; work arriving meanwhile forms the next batch.
 */
import type { ControlledTransaction, Kysely } from 'kysely'
import { UnavailableError } from '../../domain/errors.js'
import {
  createCommitMarkers,
  type CommitMarkers,
  type Marker,
  type Outcome,
} from './commit-markers.js'
import { isTransientLockError, transientCause, type TransientCause } from './errors.js'
import type { DatabaseHandle } from './connection.js'
import { isUnreachable } from './mysql-pool.js'
import type { Database } from './schema.js'

export interface GroupCommitOptions {
  /** How long the first operation of a batch waits for company; 0 means "until the next tick". */
  intervalMs: number
  /** A batch starts at once when this many operations are waiting. */
  maxBatch: number
  /** Told of every batch: its writes and its time in seconds (metrics). */
  onBatch?: (size: number, seconds: number) => void
  /** Told of every write run again after a transient error (a deadlock, on Galera a certification failure), with its cause. */
  onRetry?: (cause: TransientCause) => void
}

/** The transaction a write runs in (what `run` hands its function). */
export type WriteTrx = Kysely<Database>

/** Runs one write in a transaction (the group committer's `run`). */
export type WriteRunner = <T>(fn: (trx: WriteTrx) => Promise<T>) => Promise<T>

export interface GroupCommitter {
  /**
   * Runs `fn` inside the next batch's transaction and settles after that transaction commits.
   * `fn` must use only `trx` (not the outer db, which would wait for this very transaction on
   * SQLite), must not open transactions of its own, and must not call `run` (it would wait for
   * a batch that waits for it). It may run again only after its transaction rolled back.
   * Rejects with UnavailableError when the COMMIT failed and its outcome cannot be learned.
   */
  run<T>(fn: (trx: Kysely<Database>) => Promise<T>): Promise<T>
  /** Finishes the waiting and running work, then refuses more with UnavailableError. */
  close(): Promise<void>
  /** Batch transactions started, and operations run through them (retries not counted). */
  stats(): { batches: number; ops: number }
}

/** The last batch must have had this many writes for the next one to wait `intervalMs` for company. */
const WAIT_AFTER_BATCH_OF = 4

/** Runs of one op that lost a lock race (deadlock, serialization failure) before it gives up. */
const MAX_ATTEMPTS = 5

/**
 * Errors of a connection lost before its COMMIT was sent (a killed Galera node, issue 30): the
 * transaction died with the connection, so the op may run again, on a new connection (which
 * mysql-pool.ts takes from the next host). Lost at the COMMIT, the marker decides instead.
 */
const lostBeforeCommit = new WeakSet<object>()
const mayRunAgain = (err: unknown) =>
  isTransientLockError(err) ||
  (typeof err === 'object' && err !== null && lostBeforeCommit.has(err))

interface Op {
  fn: (trx: Kysely<Database>) => Promise<unknown>
  /** Runs that failed on a transient lock error so far. */
  attempts: number
  resolve(value: unknown): void
  reject(err: unknown): void
}

type Trx = ControlledTransaction<Database, string[]>

/** What every transaction of one committer needs. */
interface Ctx {
  db: Kysely<Database>
  markers: CommitMarkers
  /** A write that failed on `err` is run again: told to `onRetry`. */
  retried(err: unknown): void
}

/** Creates a committer over `handle`; the handle stays the caller's to close. */
export function createGroupCommitter(
  handle: DatabaseHandle,
  options: GroupCommitOptions,
): GroupCommitter {
  const ctx: Ctx = {
    db: handle.db,
    markers: createCommitMarkers(handle),
    retried: (err) => options.onRetry?.(transientCause(err) ?? 'connection_lost'),
  }
  const intervalMs = Math.max(0, options.intervalMs)
  const maxBatch = Math.max(1, Math.floor(options.maxBatch))
  const queue: Op[] = []
  let timer: NodeJS.Timeout | NodeJS.Immediate | undefined
  let inFlight: Promise<void> | undefined
  let closed = false
  let batches = 0
  let ops = 0
  /** Size of the last batch: a small one means little company is coming, so the next write need not wait. */
  let lastBatchSize = 0
  let timerIsImmediate = false

  const clearTimer = () => {
    if (timer === undefined) return
    if (timerIsImmediate) clearImmediate(timer as NodeJS.Immediate)
    else clearTimeout(timer as NodeJS.Timeout)
    timer = undefined
  }

  /** Starts a batch now if none is running; otherwise the running one starts the next when done. */
  const flush = () => {
    clearTimer()
    if (inFlight || queue.length === 0) return
    const batch = queue.splice(0, maxBatch)
    lastBatchSize = batch.length
    batches++
    ops += batch.length
    const started = performance.now()
    inFlight = runBatch(ctx, batch, requeue)
      .then(() => options.onBatch?.(batch.length, (performance.now() - started) / 1000))
      .then(() => ctx.markers.sweep())
      .finally(() => {
        inFlight = undefined
        // Whatever arrived meanwhile has waited long enough: it goes now, as the next batch.
        if (queue.length > 0) flush()
      })
  }

  /** Ops that lost a lock race go first in the next batch, after this one has released its locks. */
  const requeue = (lost: Op[]) => {
    queue.unshift(...lost)
  }

  const schedule = () => {
    if (queue.length >= maxBatch) return flush()
    if (timer !== undefined || inFlight) return
    // Waiting for company pays only under load (PostgreSQL's commit_delay waits only with
    // commit_siblings others active): after a small batch, go at once (the writes of this same
    // tick still share it); under load, batches fill up while waiting.
    timerIsImmediate = lastBatchSize < WAIT_AFTER_BATCH_OF || intervalMs === 0
    timer = timerIsImmediate ? setImmediate(flush) : setTimeout(flush, intervalMs)
  }

  return {
    run<T>(fn: (trx: Kysely<Database>) => Promise<T>): Promise<T> {
      if (closed) return Promise.reject(new UnavailableError('group committer is closed'))
      return new Promise<T>((resolve, reject) => {
        queue.push({ fn, attempts: 0, resolve: resolve as (v: unknown) => void, reject })
        schedule()
      })
    },
    async close() {
      closed = true
      flush()
      while (inFlight) await inFlight
      await ctx.markers.sweep({ all: true })
    },
    stats: () => ({ batches, ops }),
  }
}

/** The error of a write whose COMMIT failed and whose outcome could not be learned. */
function unknownOutcome(cause: unknown): UnavailableError {
  return new UnavailableError(
    'the database did not confirm the COMMIT and could not be asked about it: the outcome is unknown and the write may have landed',
    { cause },
  )
}

/**
 * Runs one batch; when this resolves, every op's promise is settled or (lost a lock race to
 * another process's transaction) handed to `requeue`. Never rejects.
 */
async function runBatch(ctx: Ctx, batch: Op[], requeue: (ops: Op[]) => void): Promise<void> {
  if (batch.length === 1) return runSingle(ctx, batch[0]!, requeue)
  const marker = ctx.markers.next()
  let trx: Trx
  try {
    trx = (await ctx.db.startTransaction().execute()) as unknown as Trx
  } catch {
    return runAlone(ctx, batch)
  }
  const done: { op: Op; value: unknown }[] = []
  const failed: { op: Op; err: unknown }[] = []
  const retry: Op[] = []
  const lost: Op[] = []
  for (const [i, op] of batch.entries()) {
    if (retry.length > 0) {
      retry.push(op)
      continue
    }
    const name = `gc_${i}`
    try {
      await trx.savepoint(name).execute()
    } catch {
      retry.push(op) // the transaction itself is broken
      continue
    }
    try {
      const value = await op.fn(trx)
      await trx.releaseSavepoint(name).execute()
      done.push({ op, value })
    } catch (err) {
      try {
        await trx.rollbackToSavepoint(name).execute()
        await trx.releaseSavepoint(name).execute()
        // Retrying in this transaction would wait on the same locks again: next batch instead.
        if (isTransientLockError(err) && ++op.attempts < MAX_ATTEMPTS) {
          ctx.retried(err)
          lost.push(op)
        } else failed.push({ op, err })
      } catch {
        retry.push(op) // cannot tell the op's failure from the transaction's
      }
    }
  }
  if (retry.length === 0 && marker) {
    try {
      await ctx.markers.write(trx, marker)
    } catch {
      retry.push(...done.splice(0).map((d) => d.op), ...lost.splice(0))
    }
  }
  if (retry.length > 0) {
    // Nothing was committed: each op that did not fail on its own is safe to run again.
    await trx
      .rollback()
      .execute()
      .catch(() => {})
    for (const { op, err } of failed) op.reject(err)
    return runAlone(ctx, [...done.map((d) => d.op), ...lost, ...retry])
  }
  const { outcome, err: commitErr } = await commit(ctx, trx, marker)
  // Failed and lost ops were rolled back to their savepoints: the COMMIT's outcome is not theirs.
  for (const { op, err } of failed) op.reject(err)
  switch (outcome) {
    case 'committed':
      for (const { op, value } of done) op.resolve(value)
      if (lost.length > 0) requeue(lost)
      return
    case 'rolled-back':
      return runAlone(ctx, [...done.map((d) => d.op), ...lost])
    case 'unknown':
      for (const { op } of done) op.reject(unknownOutcome(commitErr))
      if (lost.length > 0) requeue(lost)
      return
  }
}

/** Commits `trx`; after a failed COMMIT, asks the marker (or, without one, knows) how it ended. */
async function commit(
  ctx: Ctx,
  trx: Trx,
  marker: Marker | undefined,
): Promise<{ outcome: Outcome; err?: unknown }> {
  try {
    await trx.commit().execute()
  } catch (err) {
    // Kysely keeps the connection after a failed COMMIT unless the database aborted; release it.
    await trx
      .rollback()
      .execute()
      .catch(() => {})
    return { outcome: marker ? await ctx.markers.outcome(marker) : 'rolled-back', err }
  }
  if (marker) ctx.markers.settled(marker)
  return { outcome: 'committed' }
}

/**
 * Runs `fn` in a transaction of its own and returns its value, also when the COMMIT's answer was
 * lost but the marker shows it committed. Throws `fn`'s error, the COMMIT's error when the
 * transaction rolled back, or UnavailableError when its outcome is unknown.
 */
async function runInOwnTransaction(ctx: Ctx, fn: Op['fn']): Promise<unknown> {
  const marker = ctx.markers.next()
  let value: unknown
  let atCommit = false
  try {
    await ctx.db.transaction().execute(async (trx) => {
      value = await fn(trx)
      if (marker) await ctx.markers.write(trx, marker)
      atCommit = true
    })
  } catch (err) {
    // Before the COMMIT, Kysely rolled the transaction back (or the database aborted it).
    if (!atCommit && isUnreachable(err) && typeof err === 'object' && err !== null)
      lostBeforeCommit.add(err)
    if (!atCommit || !marker) throw err
    const outcome = await ctx.markers.outcome(marker)
    switch (outcome) {
      case 'committed':
        return value
      case 'rolled-back':
        throw err
      case 'unknown':
        throw unknownOutcome(err)
    }
  }
  if (marker) ctx.markers.settled(marker)
  return value
}

/** A batch of one needs no savepoint: the op's transaction is its own (two round trips fewer). */
async function runSingle(ctx: Ctx, op: Op, requeue: (ops: Op[]) => void): Promise<void> {
  try {
    op.resolve(await runInOwnTransaction(ctx, op.fn))
  } catch (err) {
    if (mayRunAgain(err) && ++op.attempts < MAX_ATTEMPTS) {
      ctx.retried(err)
      requeue([op])
    } else op.reject(err)
  }
}

/** The fallback: each op in its own transaction, one after another; lock races are retried. */
async function runAlone(ctx: Ctx, batch: Op[]): Promise<void> {
  for (const op of batch) {
    for (;;) {
      try {
        op.resolve(await runInOwnTransaction(ctx, op.fn))
        break
      } catch (err) {
        if (!mayRunAgain(err) || ++op.attempts >= MAX_ATTEMPTS) {
          op.reject(err)
          break
        }
        ctx.retried(err)
        // MySQL rolls back the whole transaction of a deadlock victim: wait a little and run again.
        await new Promise((r) => setTimeout(r, 5 * op.attempts + Math.random() * 20))
      }
    }
  }
}
