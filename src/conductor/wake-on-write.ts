/**
 * A group committer that wakes a background worker after every commit whose transaction wrote
 * what the worker handles: the event relay after events (`wakingCommitter`), the custody sealer
 * after ledger records (`sealingCommitter`). `wrote(trx)` tells, and forgets, whether the
 * transaction wrote such rows; the wake comes once the commit is done, never for a rollback.
 */
import type { GroupCommitter } from '../db/group-commit.js'

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
