/**
 * Device lifecycle writes (seed 000: inactive → ready → installing → active | error). Every
 * transition is a conditional UPDATE (`… WHERE lifecycle IN (<from>)`), so two conductors racing
 * on one device cannot both move it: the loser updates no row and learns it from the answer.
 */
import type { Kysely } from 'kysely'
import type { Lifecycle } from '../domain/inventory/inventory.js'
import type { Database } from './core/schema.js'

/** lifecycle_reason is text; a reason longer than this is cut (a tool's whole stderr is not a reason). */
export const MAX_LIFECYCLE_REASON = 2000

/**
 * Moves device `uuid` to `to` (with `reason`, null to clear it) if its lifecycle is one of `from`.
 * @returns false when no device with that uuid is in one of `from` (missing, or moved by someone else)
 */
export async function updateDeviceLifecycle(
  db: Kysely<Database>,
  uuid: string,
  change: {
    from: readonly Lifecycle[]
    to: Lifecycle
    reason: string | null
    updatedBefore?: string
  },
  now: string,
): Promise<boolean> {
  const reason = change.reason === null ? null : change.reason.slice(0, MAX_LIFECYCLE_REASON)
  let query = db
    .updateTable('devices')
    .set({ lifecycle: change.to, lifecycle_reason: reason, updated_at: now })
    .where('uuid', '=', uuid)
    .where('lifecycle', 'in', [...change.from])
  // Timestamps are fixed-width ISO text: they compare as text.
  if (change.updatedBefore !== undefined)
    query = query.where('updated_at', '<', change.updatedBefore)
  const result = await query.executeTakeFirst()
  return result.numUpdatedRows > 0n
}
