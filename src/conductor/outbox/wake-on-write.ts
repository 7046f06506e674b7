/**
 * A group committer that wakes a background worker after every commit whose transaction wrote
 * what the worker handles: the event relay after events (`wakingCommitter`), the custody sealer
 * after ledger records (`sealingCommitter`). `wrote(trx)` tells, and forgets, whether the
 * transaction wrote such rows; the wake comes once the commit is done, never for a rollback.
 */
import type { GroupCommitter } from '../../db/core/group-commit.js'

export function wakeOnWrite(
  committer: GroupCommitter,
  wrote: (trx: object) => boolean,
  wake: () => void,
): GroupCommitter {
  return {
    async run(fn) {
      let written = false
      const value = await committer.run(async (trx) => {
        const result = await fn(trx)
        written = wrote(trx)
        return result
      })
      if (written) wake()
      return value
    },
    close: () => committer.close(),
    stats: () => committer.stats(),
  }
}

/**
 * Wakes that arrive within `delayMs` of the first (0: within the same turn of the event loop) ask
 * for one pass, not one each: every op of a group-commit batch wakes the worker, and concurrent
 * batches commit close together (docs/performance.md, "Statements per cycle (issue 28)").
 * `cancel` drops a pending wake (stopping: the caller's last pass covers it).
 */
export function coalescedWake(
  run: () => unknown,
  delayMs: number,
): { wake(): void; cancel(): void } {
  let timer: NodeJS.Timeout | NodeJS.Immediate | undefined
  const fire = () => {
    timer = undefined
    run()
  }
  return {
    wake() {
      if (timer !== undefined) return
      timer = delayMs > 0 ? setTimeout(fire, delayMs) : setImmediate(fire)
    },
    cancel() {
      if (timer === undefined) return
      if (delayMs > 0) clearTimeout(timer as NodeJS.Timeout)
      else clearImmediate(timer as NodeJS.Immediate)
      timer = undefined
    },
  }
}
