/**
 * The cleaning hold of the Placement sync (issue 28, docs/cleaning.md "The hold"): Placement's
 * `reserved` for cleaning units goes up at once but comes down only after `holdMs`. Under steady
 * turnover the number of a deployable's units cleaning moves up and down around a level with every
 * release and every answer, and following it cost two inventory writes per release (up after the
 * window, down after the answer). Held at the highest count seen lately, it costs a write only when
 * that level is passed, and one more `holdMs` after the turnover stops.
 *
 * The hold only ever shows fewer units free in Placement than there are, never more, never more
 * reserved and allocated than the total, and it never hides the last free unit: a held count is
 * lowered as far as needed to leave Placement one free unit while the database has one. Whether a unit can be claimed is the database's fence
 * (`in_use`), never Placement's `reserved`, so nothing here touches who may hold a device.
 * Pure: the sync keeps the holds (per deployable id) and passes the clock.
 */
import type { PlacementRow } from '../../db/placement-rows.js'

export interface CleaningHold {
  /**
   * The count of units cleaning that Placement shows reserved for this deployable (programs and
   * configures are not held: they are rare, and their units are shown as they are).
   */
  count: number
  /** Epoch ms until which a lower count is not written. */
  until: number
}

export interface HeldRows {
  /** The rows with `cleaning` raised to the held counts. */
  rows: PlacementRow[]
  /** Epoch ms of the earliest hold that kept a count up: the sync must run again then. */
  recheckAt: number | undefined
}

/**
 * Applies and updates `holds` (in place) for `rows` at `nowMs`. A count at or above the held one
 * renews the hold; a lower one is held until the hold ends, as far as `mostReserved` allows.
 * `holdMs` 0 turns the hold off (rows returned as they are, holds cleared).
 */
export function applyCleaningHold(
  rows: readonly PlacementRow[],
  holds: Map<number, CleaningHold>,
  nowMs: number,
  holdMs: number,
): HeldRows {
  let recheckAt: number | undefined
  const out = rows.map((row) => {
    const live = row.cleaning - row.reconfiguring
    const hold = holds.get(row.id)
    if (holdMs <= 0 || (hold === undefined && live === 0)) {
      holds.delete(row.id)
      return row
    }
    if (hold !== undefined && live < hold.count && nowMs < hold.until) {
      const shown = Math.max(live, Math.min(hold.count, mostReserved(row) - row.reconfiguring))
      if (shown > live) {
        recheckAt = Math.min(recheckAt ?? hold.until, hold.until)
        return { ...row, cleaning: row.reconfiguring + shown }
      }
    }
    if (live === 0) holds.delete(row.id)
    else holds.set(row.id, { count: live, until: nowMs + holdMs })
    return row
  })
  return { rows: out, recheckAt }
}

/**
 * The most units a hold may show reserved: Placement's allocations (one per bound unit) plus
 * `reserved` never over the total, and one unit left free in Placement while one is free in the
 * database.
 */
function mostReserved(row: PlacementRow): number {
  const freeInDatabase = row.numAccelerators - row.inUse
  return row.numAccelerators - row.bound - (freeInDatabase > 0 ? 1 : 0)
}
