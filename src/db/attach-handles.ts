/**
 * Attach handles: how a VM attaches to a deployable (a PCI function, an mdev, …). A bind claims a
 * free one and releases it when the request lets go.
 */
import type { Kysely } from 'kysely'
import { dialectOf, type ReadDb } from './core/connection.js'
import { onGalera } from './core/mysql-pool.js'
import type { AttachHandle, AttachType } from '../domain/inventory/inventory.js'
import { newUuid } from '../domain/ids.js'
import type { AttachHandleRow, Database } from './core/schema.js'

/** Maps an `attach_handles` row to the domain type. */
export function toAttachHandle(row: AttachHandleRow): AttachHandle {
  return {
    id: row.id,
    uuid: row.uuid,
    deployableId: row.deployable_id,
    type: row.attach_type as AttachType,
    info: JSON.parse(row.attach_info) as Record<string, string>,
    inUse: Number(row.in_use) === 1,
    mdevUuid: row.mdev_uuid,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

/** Lists attach handles in id order, optionally of one deployable. */
export async function listAttachHandles(
  db: ReadDb,
  filter: { deployableId?: number } = {},
): Promise<AttachHandle[]> {
  let qb = db.selectFrom('attach_handles').selectAll()
  if (filter.deployableId !== undefined) qb = qb.where('deployable_id', '=', filter.deployableId)
  return (await qb.orderBy('id').execute()).map(toAttachHandle)
}

/** One attach handle by id, or undefined. */
export async function getAttachHandle(db: ReadDb, id: number): Promise<AttachHandle | undefined> {
  const row = await db
    .selectFrom('attach_handles')
    .selectAll()
    .where('id', '=', id)
    .executeTakeFirst()
  return row && toAttachHandle(row)
}

/** The handle each deployable's last claim took in this process (next fit on Galera). */
const lastClaimed = new Map<number, number>()

/**
 * Takes one free attach handle of a deployable (the lowest id not in use and not being taken by
 * another transaction), or returns undefined when none is free. PostgreSQL and MariaDB: SELECT …
 * FOR UPDATE SKIP LOCKED LIMIT 1, then UPDATE … WHERE id = ? AND in_use = 0, so concurrent binders
 * (even in other conductors) never wait for each other nor take the same handle. SQLite has one
 * writer at a time, so a single conditional UPDATE does. Run it in a transaction together with the
 * ARQ's own update; the claim is undone if that transaction rolls back.
 *
 * An MDEV handle gets a fresh `mdev_uuid` in the same UPDATE (migration 0018; docs/nova.md): the
 * uuid of this allocation's mdev, never the last tenant's, so that an mdev or a libvirt definition
 * left behind under the old uuid cannot collide with the new one.
 */
export async function claimAttachHandle(
  db: Kysely<Database>,
  deployableId: number,
  options: { now?: string } = {},
): Promise<AttachHandle | undefined> {
  const set = options.now === undefined ? { in_use: 1 } : { in_use: 1, updated_at: options.now }
  const mdevUuid = newUuid()
  const free = () =>
    db
      .selectFrom('attach_handles')
      .where('deployable_id', '=', deployableId)
      .where('in_use', '=', 0)
      .orderBy('id')
      .limit(1)
  if (dialectOf(db) === 'sqlite') {
    const row = await db
      .updateTable('attach_handles')
      .set(set)
      .set((eb) => ({
        mdev_uuid: eb
          .case()
          .when('attach_type', '=', 'MDEV')
          .then(mdevUuid)
          .else(eb.ref('mdev_uuid'))
          .end(),
      }))
      .where('id', '=', (eb) => eb.selectFrom(free().select('id').as('f')).select('f.id'))
      .where('in_use', '=', 0)
      .returningAll()
      .executeTakeFirst()
    return row && toAttachHandle(row)
  }
  // Outside a transaction the row lock ends at once; the conditional UPDATE still refuses a handle
  // taken meanwhile, and the loop tries the next one. On Galera, SKIP LOCKED does not see another
  // node's locks: each process goes on after the handle it took last (next fit, wrapping once), so
  // that conductors on two nodes do not all race for the lowest free handle (issue 30).
  const spread = onGalera()
  let after = spread ? (lastClaimed.get(deployableId) ?? 0) : 0
  for (;;) {
    const row = await free()
      .$if(after > 0, (q) => q.where('id', '>', after))
      .selectAll()
      .forUpdate()
      .skipLocked()
      .executeTakeFirst()
    if (!row && after > 0) {
      after = 0
      continue
    }
    if (!row) return undefined
    if (spread) lastClaimed.set(deployableId, row.id)
    const claimed = row.attach_type === 'MDEV' ? { ...set, mdev_uuid: mdevUuid } : set
    const res = await db
      .updateTable('attach_handles')
      .set(claimed)
      .where('id', '=', row.id)
      .where('in_use', '=', 0)
      .executeTakeFirst()
    if (Number(res.numUpdatedRows) === 1) return toAttachHandle({ ...row, ...claimed })
  }
}

/**
 * Marks a handle free again, unless an accelerator request still names it (so a late release can
 * never free a handle that another request has claimed meanwhile). With `clean`, the handle stays
 * out of service in `clean_state = pending` (still `in_use`, so no claim takes it) until its clean
 * is settled (src/db/cleaning.ts), stamped as asked now: the releasing conductor asks. Returns false when it was not in use, does not exist,
 * is already cleaning, or is still named.
 */
export async function releaseAttachHandle(
  db: Kysely<Database>,
  handleId: number,
  options: { now?: string; clean?: { allocationUuid: string | null } } = {},
): Promise<boolean> {
  const { now, clean } = options
  const stamp = now === undefined ? {} : { updated_at: now }
  const set = clean
    ? {
        ...stamp,
        clean_state: 'pending',
        clean_since: now ?? null,
        // The releasing conductor asks at once (its first ask needs no stamp of its own).
        clean_attempt_at: now ?? null,
        clean_allocation_uuid: clean.allocationUuid,
      }
    : { ...stamp, in_use: 0 }
  const res = await db
    .updateTable('attach_handles')
    .set(set)
    .where('id', '=', handleId)
    .where('in_use', '=', 1)
    .where('clean_state', 'is', null)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('accelerator_requests').select('id').where('attach_handle_id', '=', handleId),
        ),
      ),
    )
    .executeTakeFirst()
  return Number(res.numUpdatedRows) === 1
}
