/**
 * AgentRpc 1.8 `cleanUnits` (issue 28): one message asks an agent to clean many units, and the
 * answer has one entry per unit, in the asked order. A unit's failure is its entry (the error in
 * its wire form, as the envelope carries a thrown one), never a failure of the whole message:
 * the conductor settles each unit as if it had been asked alone (`cleanUnit`, 1.5). The types of
 * `cleanUnit` live here too (a leaf: agent-rpc.ts re-exports them).
 */
import { deserializeError, serializeError, type SerializedError } from '../bus/envelope.js'
import type { AppError } from '../domain/errors.js'

/** What `cleanUnit` is asked to clean: a released unit, by its attach handle as discovered. */
export interface CleanUnitRequest {
  handle: { type: string; info: Record<string, string> }
  /**
   * An `MDEV` unit's mdev: the uuid minted at its claim (`attach_handles.mdev_uuid`, the ARQ's
   * `attach_handle_uuid`; docs/nova.md), or the handle's uuid for a unit claimed before that.
   */
  mdevUuid?: string
  /**
   * The release this clean is for: an ask for the release last cleaned is answered without a new
   * clean, and one for a newer release never joins an older clean (src/agent/cleaning.ts).
   */
  ticket?: string
}

/** The answer of `cleanUnit`: what the custody ledger records (docs/cleaning.md). */
export interface CleanUnitResult {
  /** The driver that owns the unit. */
  driver: string
  /** `auto`, or `none` (not cleaned: the operator's choice, recorded). */
  policy: 'auto' | 'none'
  /** How it was cleaned (`pci-flr`, `nvme-sanitize`, …, `none`). */
  method: string
  /** sha256 (hex) of the clean's and the verify's evidence. */
  evidenceSha256: string
  durationMs: number
}

/** The most units one `cleanUnits` message may carry; more is refused (field `units`). */
export const MAX_CLEAN_UNITS = 256

/** What `cleanUnits` is asked: the units, each as `cleanUnit` takes it. */
export interface CleanUnitsRequest {
  units: CleanUnitRequest[]
}

/** One unit's part of the answer: its result, or the error `cleanUnit` would have thrown. */
export type CleanUnitsEntry =
  { ok: true; result: CleanUnitResult } | { ok: false; error: SerializedError }

/** The answer of `cleanUnits`: `results[i]` answers `units[i]`. */
export interface CleanUnitsResult {
  results: CleanUnitsEntry[]
}

/** The entry of one unit's settled clean (the agent's side). */
export function toCleanUnitsEntry(settled: PromiseSettledResult<CleanUnitResult>): CleanUnitsEntry {
  return settled.status === 'fulfilled'
    ? { ok: true, result: settled.value }
    : { ok: false, error: serializeError(settled.reason) }
}

/**
 * The result of one entry, or its error rehydrated (the same AppError subclass and code a
 * `cleanUnit` call would have thrown). A missing or malformed entry is an INTERNAL_ERROR: the unit
 * stays cleaning and is asked again.
 */
export function fromCleanUnitsEntry(entry: unknown): CleanUnitResult | AppError {
  const e = entry as Partial<{ ok: boolean; result: CleanUnitResult; error: SerializedError }>
  if (e?.ok === true && e.result !== undefined && typeof e.result === 'object') return e.result
  if (e?.ok === false && e.error !== undefined && typeof e.error?.name === 'string')
    return deserializeError(e.error)
  return deserializeError({
    name: 'AppError',
    code: 'INTERNAL_ERROR',
    message: 'the agent answered cleanUnits without an entry for this unit',
  })
}
