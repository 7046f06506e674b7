/** Deployables (the units Placement sees as resource providers), read: list, get by uuid or id. */
import type { ReadDb } from '../core/connection.js'
import { NotFoundError } from '../../domain/errors.js'
import type { Deployable } from '../../domain/inventory/inventory.js'
import { paginate, type PageOptions, type PageSpec } from '../core/pagination.js'
import type { DeployableRow } from '../core/schema.js'

/** Columns a deployable list may sort by. */
export const DEPLOYABLE_SORT_KEYS = [
  'id',
  'uuid',
  'name',
  'device_id',
  'num_accelerators',
  'created_at',
  'updated_at',
] as const
export type DeployableSortKey = (typeof DEPLOYABLE_SORT_KEYS)[number]

/** Filters of `listDeployables`; exact matches, combined with AND. */
export interface DeployableFilter extends PageOptions<DeployableSortKey> {
  deviceId?: number
  name?: string
}

const PAGE: PageSpec<DeployableSortKey> = {
  table: 'deployables',
  keys: DEPLOYABLE_SORT_KEYS,
  nullable: ['updated_at'],
  notFoundCode: 'DEPLOYABLE_NOT_FOUND',
}

/** Maps a `deployables` row to the domain type. */
export function toDeployable(row: DeployableRow): Deployable {
  return {
    id: row.id,
    uuid: row.uuid,
    name: row.name,
    deviceId: row.device_id,
    parentId: row.parent_id,
    rootId: row.root_id,
    numAccelerators: row.num_accelerators,
    rpUuid: row.rp_uuid,
    driverName: row.driver_name,
    bitstreamId: row.bitstream_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

/**
 * Lists deployables, by default in id order.
 * @throws NotFoundError (`details.field` 'marker') when the marker names no deployable.
 */
export async function listDeployables(
  db: ReadDb,
  filter: DeployableFilter = {},
): Promise<Deployable[]> {
  let qb = db.selectFrom('deployables').selectAll()
  if (filter.deviceId !== undefined) qb = qb.where('device_id', '=', filter.deviceId)
  if (filter.name !== undefined) qb = qb.where('name', '=', filter.name)
  qb = await paginate(db, qb, PAGE, filter)
  return (await qb.execute()).map(toDeployable)
}

/** @throws NotFoundError with code DEPLOYABLE_NOT_FOUND. */
export async function getDeployable(db: ReadDb, uuid: string): Promise<Deployable> {
  const row = await db
    .selectFrom('deployables')
    .selectAll()
    .where('uuid', '=', uuid)
    .executeTakeFirst()
  if (!row) throw notFound({ uuid })
  return toDeployable(row)
}

/** @throws NotFoundError with code DEPLOYABLE_NOT_FOUND. */
export async function getDeployableById(db: ReadDb, id: number): Promise<Deployable> {
  const row = await db.selectFrom('deployables').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row) throw notFound({ id })
  return toDeployable(row)
}

function notFound(details: { uuid: string } | { id: number }): NotFoundError {
  const which = 'uuid' in details ? details.uuid : `#${details.id}`
  return new NotFoundError(`deployable ${which} not found`, {
    code: 'DEPLOYABLE_NOT_FOUND',
    details,
  })
}
