/**
 * Settles clean outcomes many at a time (issue 28; docs/cleaning.md): the outcomes that arrive
 * together (the entries of one `cleanUnits` answer, settled by one synchronous run) are written in one
 * committer write, one transaction for all their units: back in service or failed, the custody
 * records, the devices' health and the events (src/db/clean-settle-batch.ts: one UPDATE per unit,
 * then one read of the devices and one INSERT each of the records and the events).
 * Should that write fail, each unit is settled again alone, so that one unit's failure (a broken
 * row) never keeps the others out of service. Then each host's Placement sync runs once.
 */
import type { GroupCommitter } from '../../db/core/group-commit.js'
import { settleCleans } from '../../db/clean-settle-batch.js'
import type { CleanSettlement, CleaningUnit } from '../../db/cleaning.js'
import type { Logger } from '../../domain/logger.js'

export interface CleanSettleDeps {
  committer: Pick<GroupCommitter, 'run'>
  now: () => string
  uuid: () => string
  log: Logger
  /** Told of every settled unit (metrics): its outcome and when it was settled. */
  onSettled?: (unit: CleaningUnit, outcome: CleanSettlement) => void
  /** Told of every write: how many outcomes it settled (metrics). */
  onBatch?: (size: number) => void
}

export interface SettleItem {
  unit: CleaningUnit
  outcome: CleanSettlement
}

export interface CleanSettle {
  /**
   * Settles `items` in one transaction (each alone only if that fails); per item, the record's
   * uuid, undefined for a unit no longer cleaning (settled already, or released anew), or the
   * error that kept it from being settled (it stays as it was).
   */
  settleAll(items: readonly SettleItem[]): Promise<PromiseSettledResult<string | undefined>[]>
  /**
   * Queues one outcome for the write of the outcomes queued by the same synchronous run (one
   * `cleanUnits` answer's entries); resolves once it is written.
   */
  settle(item: SettleItem): Promise<string | undefined>
}

export function createCleanSettle(deps: CleanSettleDeps): CleanSettle {
  const { committer, now, uuid, log } = deps
  let queue: {
    item: SettleItem
    resolve(v: string | undefined): void
    reject(e: unknown): void
  }[] = []

  const write = (items: readonly SettleItem[]) =>
    committer.run(async (trx) => {
      const entries = items.map((item) => ({ ...item, recordUuid: uuid() }))
      return settleCleans(trx, entries, now())
    })

  const settleAll = async (
    items: readonly SettleItem[],
  ): Promise<PromiseSettledResult<string | undefined>[]> => {
    if (items.length === 0) return []
    let out: PromiseSettledResult<string | undefined>[]
    try {
      out = (await write(items)).map((value) => ({ status: 'fulfilled', value }))
      deps.onBatch?.(items.length)
    } catch (err) {
      if (items.length > 1)
        log.warn({ err, units: items.length }, 'settling cleans together failed; each alone now')
      out =
        items.length === 1
          ? [{ status: 'rejected', reason: err }]
          : await Promise.allSettled(
              items.map((item) => write([item]).then(([r]) => (deps.onBatch?.(1), r))),
            )
    }
    items.forEach((item, i) => {
      const r = out[i]!
      if (r.status === 'fulfilled' && r.value !== undefined)
        deps.onSettled?.(item.unit, item.outcome)
      if (r.status === 'rejected')
        log.error({ err: r.reason, handle: item.unit.handleUuid }, 'could not settle a clean')
    })
    return out
  }

  const flush = () => {
    const batch = queue
    queue = []
    void settleAll(batch.map((b) => b.item)).then((out) =>
      batch.forEach((b, i) => {
        const r = out[i]!
        if (r.status === 'fulfilled') b.resolve(r.value)
        else b.reject(r.reason)
      }),
    )
  }

  return {
    settleAll,
    settle(item) {
      return new Promise((resolve, reject) => {
        if (queue.length === 0) queueMicrotask(flush)
        queue.push({ item, resolve, reject })
      })
    },
  }
}
