/**
 * Group commit, the conductor's "save out rate" (seed 002): concurrent writes that arrive within one
 * tick share one transaction, so N callers cost one COMMIT (one fsync) instead of N.
 *
 * Each operation runs in its own savepoint (a batch of one, in a plain transaction): a failing one
 * is rolled back alone and its caller gets its own error, while the others commit. If the COMMIT
 * itself fails, each surviving operation is retried alone in its own transaction, so every caller
 * still gets its own result or error.
 * Operations therefore must be safe to run again after a rollback (they are plain DB writes).
 * One batch is in flight per committer; work arriving meanwhile forms the next batch.
 */
import type { ControlledTransaction, Kysely } from 'kysely'
import { UnavailableError } from '../domain/errors.js'
import { isTransientLockError } from './errors.js'
import type { DatabaseHandle } from './connection.js'
import type { Database } from './schema.js'

export interface GroupCommitOptions {
  /** How long the first operation of a batch waits for company; 0 means "until the next tick". */
  intervalMs: number
  /** A batch starts at once when this many operations are waiting. */
  maxBatch: number
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
   * a batch that waits for it).
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

interface Op {
  fn: (trx: Kysely<Database>) => Promise<unknown>
  /** Runs that failed on a transient lock error so far. */
  attempts: number
  resolve(value: unknown): void
  reject(err: unknown): void
}

type Trx = ControlledTransaction<Database, string[]>

/** Creates a committer over `handle`; the handle stays the caller's to close. */
export function createGroupCommitter(handle: DatabaseHandle, options: GroupCommitOptions): GroupCommitter {
  const { db } = handle
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
    inFlight = runBatch(db, batch, requeue).finally(() => {
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
    },
    stats: () => ({ batches, ops }),
  }
}

/**
 * Runs one batch; when this resolves, every op's promise is settled or (lost a lock race to
 * another process's transaction) handed to `requeue`. Never rejects.
 */
async function runBatch(db: Kysely<Database>, batch: Op[], requeue: (ops: Op[]) => void): Promise<void> {
  if (batch.length === 1) return runSingle(db, batch[0]!, requeue)
  let trx: Trx
  try {
    trx = (await db.startTransaction().execute()) as unknown as Trx
  } catch {
    return runAlone(db, batch)
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
        if (isTransientLockError(err) && ++op.attempts < MAX_ATTEMPTS) lost.push(op)
        else failed.push({ op, err })
      } catch {
        retry.push(op) // cannot tell the op's failure from the transaction's
      }
    }
  }
  if (retry.length > 0) {
    await trx.rollback().execute().catch(() => {})
    for (const { op, err } of failed) op.reject(err)
    return runAlone(db, [...done.map((d) => d.op), ...lost, ...retry])
  }
  try {
    await trx.commit().execute()
  } catch {
    // Kysely keeps the connection after a failed COMMIT unless the database aborted; release it.
    await trx.rollback().execute().catch(() => {})
    for (const { op, err } of failed) op.reject(err)
    return runAlone(db, [...done.map((d) => d.op), ...lost])
  }
  for (const { op, value } of done) op.resolve(value)
  for (const { op, err } of failed) op.reject(err)
  if (lost.length > 0) requeue(lost)
}

/** A batch of one needs no savepoint: the op's transaction is its own (two round trips fewer). */
async function runSingle(db: Kysely<Database>, op: Op, requeue: (ops: Op[]) => void): Promise<void> {
  try {
    op.resolve(await db.transaction().execute((trx) => op.fn(trx)))
  } catch (err) {
    if (isTransientLockError(err) && ++op.attempts < MAX_ATTEMPTS) requeue([op])
    else op.reject(err)
  }
}

/** The fallback: each op in its own transaction, one after another; lock races are retried. */
async function runAlone(db: Kysely<Database>, batch: Op[]): Promise<void> {
  for (const op of batch) {
    for (;;) {
      try {
        op.resolve(await db.transaction().execute((trx) => op.fn(trx)))
        break
      } catch (err) {
        if (!isTransientLockError(err) || ++op.attempts >= MAX_ATTEMPTS) {
          op.reject(err)
          break
        }
        // MySQL rolls back the whole transaction of a deadlock victim: wait a little and run again.
        await new Promise((r) => setTimeout(r, 5 * op.attempts + Math.random() * 20))
      }
    }
  }
}
