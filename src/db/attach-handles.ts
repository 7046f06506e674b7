/** Attach handles: how a VM attaches to a deployable (a PCI function, an mdev, …). */
import type { Kysely } from 'kysely'
import type { AttachHandle, AttachType } from '../domain/inventory.js'
import type { AttachHandleRow, Database } from './schema.js'

/** Maps an `attach_handles` row to the domain type. */
export function toAttachHandle(row: AttachHandleRow): AttachHandle {
  return {
    id: row.id,
    uuid: row.uuid,
    deployableId: row.deployable_id,
    type: row.attach_type as AttachType,
    info: JSON.parse(row.attach_info) as Record<string, string>,
    inUse: Number(row.in_use) === 1,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

/** Lists attach handles in id order, optionally of one deployable. */
export async function listAttachHandles(
  db: Kysely<Database>,
  filter: { deployableId?: number } = {},
): Promise<AttachHandle[]> {
  let qb = db.selectFrom('attach_handles').selectAll()
  if (filter.deployableId !== undefined) qb = qb.where('deployable_id', '=', filter.deployableId)
  return (await qb.orderBy('id').execute()).map(toAttachHandle)
}
