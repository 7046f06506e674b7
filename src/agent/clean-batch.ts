/**
 * `cleanUnits` (AgentRpc 1.8, issue 28; cleaning.ts): many `cleanUnit` asks in one message. Each
 * unit goes through `cleanUnit` side by side; the answer has one entry per unit once all have
 * ended, or `batchGraceMs` (or half the first one's time, if longer) after the first one did: a
 * unit still cleaning then is answered CLEAN_RUNNING (its clean goes on, and the conductor's next
 * ask for it joins it), so that a fast unit's return never waits long for a slow one's. A unit's
 * failure is its entry, not the message's.
 */
import { InvalidInputError, UnavailableError } from '../domain/errors.js'
import type { CleanUnitResult, CleanUnitsResult } from '../rpc/agent-rpc.js'
import { MAX_CLEAN_UNITS, toCleanUnitsEntry } from '../rpc/clean-units.js'

export interface CleanBatchDeps {
  /** One unit's clean (joins, memory and aborts as `cleanUnit`). */
  cleanUnit(raw: unknown): Promise<CleanUnitResult>
  /** How long to wait for the rest once one unit's clean is over, at least. */
  batchGraceMs: number
}

/** @throws InvalidInputError (field `units`) when `units` is not a list of 1 to MAX_CLEAN_UNITS */
export async function cleanBatch(deps: CleanBatchDeps, raw: unknown): Promise<CleanUnitsResult> {
  const list = (raw as { units?: unknown } | null)?.units
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_CLEAN_UNITS)
    throw new InvalidInputError(`units must be a list of 1 to ${MAX_CLEAN_UNITS} units`, {
      code: 'CLEAN_TARGET_INVALID',
      details: { field: 'units' },
    })
  const settled: (PromiseSettledResult<CleanUnitResult> | undefined)[] = list.map(() => undefined)
  const runs = list.map((unit, i) =>
    deps.cleanUnit(unit).then(
      (value) => void (settled[i] = { status: 'fulfilled', value }),
      (reason: unknown) => void (settled[i] = { status: 'rejected', reason }),
    ),
  )
  // The grace: `batchGraceMs`, or half the first clean's time if longer (units of one driver
  // end together, give or take a loaded event loop).
  const started = performance.now()
  let grace: NodeJS.Timeout | undefined
  const waitRest = () => {
    const ms = Math.max(deps.batchGraceMs, (performance.now() - started) / 2)
    return new Promise((r) => (grace = setTimeout(r, ms)))
  }
  await Promise.race([Promise.all(runs), Promise.race(runs).then(waitRest)])
  clearTimeout(grace)
  return {
    results: settled.map((s) =>
      toCleanUnitsEntry(
        s ?? {
          status: 'rejected',
          reason: new UnavailableError('still cleaning: ask again to join the clean', {
            code: 'CLEAN_RUNNING',
          }),
        },
      ),
    ),
  }
}
