/**
 * The pure half of the Placement sync: from a host's deployable rows, which providers to write
 * (their desired state differs from the hash last confirmed in Placement) and which to delete
 * (pending removal, no longer held in Cyborg, and still in Placement).
 */
import {
  desiredProvider,
  providerHash,
  providerHashChanges,
  type ProviderState,
} from '../../domain/placement.js'
import type { PlacementRow } from '../../db/placement-rows.js'
import { isOffered } from '../../domain/inventory/inventory.js'

export interface ProviderWrite {
  id: number
  state: ProviderState
  hash: string
  /** Not in Placement as far as the database knows: create it first. */
  create: boolean
  /** What differs from the state last confirmed written (both for a new provider). */
  changes: { inventory: boolean; traits: boolean }
}

export interface HostPlan {
  writes: ProviderWrite[]
  /**
   * Providers to delete; `fallback` is the write (everything reserved) to make instead when
   * Placement refuses because allocations remain, if the provider does not hold that already.
   */
  deletes: { id: number; uuid: string; name: string; fallback?: ProviderWrite }[]
  /** Deployables that cannot have a provider, with the reason (logged, not retried). */
  problems: string[]
}

/** Active, enabled, healthy and not going away: the only state in which accelerators are offered. */
const isOfferedRow = (row: PlacementRow): boolean =>
  isOffered({ ...row.device, removalPending: row.removalPending })

export function planHost(rows: readonly PlacementRow[]): HostPlan {
  const plan: HostPlan = { writes: [], deletes: [], problems: [] }
  for (const row of rows) {
    if (row.rpUuid === null) continue
    const write = desiredWrite(row, row.rpUuid, plan.problems)
    if (row.removalPending && !row.held) {
      // Nothing in Cyborg holds it any more: its provider goes first, then (next diff) its rows.
      if (row.placementHash === null) continue
      plan.deletes.push({
        id: row.id,
        uuid: row.rpUuid,
        name: row.name,
        ...(write ? { fallback: write } : {}),
      })
    } else if (write) plan.writes.push(write)
  }
  return plan
}

/** What the row's provider should hold (as the sync writes it), or why it can have none. */
export function desiredStateOf(row: PlacementRow, rpUuid: string) {
  return desiredProvider({
    rpUuid,
    name: row.name,
    numAccelerators: row.numAccelerators,
    attributes: row.attributes,
    offered: isOfferedRow(row),
    cleaning: row.cleaning,
  })
}

/** The write that brings the row's provider to its desired state, or undefined if it has it already. */
function desiredWrite(
  row: PlacementRow,
  rpUuid: string,
  problems: string[],
): ProviderWrite | undefined {
  const desired = desiredStateOf(row, rpUuid)
  if ('problem' in desired) {
    problems.push(desired.problem)
    return undefined
  }
  if (desired.skipped.length > 0) {
    problems.push(
      `deployable ${row.name}: invalid trait names left out: ${desired.skipped.join(', ')}`,
    )
  }
  const hash = providerHash(desired.state)
  if (hash === row.placementHash) return undefined
  return {
    id: row.id,
    state: desired.state,
    hash,
    create: row.placementHash === null,
    changes: providerHashChanges(row.placementHash, hash),
  }
}
