/**
 * Attributes of deployables, read (key `rc` is the resource class, keys starting with `trait` are
 * traits): list, by many deployables, get. Writes are src/db/attributes.ts.
 */
import type { ReadDb } from '../core/connection.js'
import { NotFoundError } from '../../domain/errors.js'
import type { Attribute } from '../../domain/inventory/inventory.js'
import type { AttributeRow } from '../core/schema.js'

/** Ids per query when reading the attributes of many deployables; stays under every driver's parameter limit. */
const CHUNK = 1000

/** Maps an `attributes` row to the domain type. */
export function toAttribute(row: AttributeRow): Attribute {
  return {
    id: row.id,
    uuid: row.uuid,
    deployableId: row.deployable_id,
    key: row.key,
    value: row.value,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

/** Lists attributes in id order, filtered by deployable and/or key. */
export async function listAttributes(
  db: ReadDb,
  filter: { deployableId?: number; key?: string } = {},
): Promise<Attribute[]> {
  let qb = db.selectFrom('attributes').selectAll()
  if (filter.deployableId !== undefined) qb = qb.where('deployable_id', '=', filter.deployableId)
  if (filter.key !== undefined) qb = qb.where('key', '=', filter.key)
  return (await qb.orderBy('id').execute()).map(toAttribute)
}

/**
 * The attributes of many deployables at once (one query per thousand ids), in id order.
 * Every requested id has an entry, empty when it has no attributes.
 */
export async function listAttributesByDeployableIds(
  db: ReadDb,
  ids: number[],
): Promise<Map<number, Attribute[]>> {
  const unique = [...new Set(ids)]
  const out = new Map<number, Attribute[]>(unique.map((id) => [id, []]))
  for (let i = 0; i < unique.length; i += CHUNK) {
    const rows = await db
      .selectFrom('attributes')
      .selectAll()
      .where('deployable_id', 'in', unique.slice(i, i + CHUNK))
      .orderBy('id')
      .execute()
    for (const row of rows) out.get(row.deployable_id)?.push(toAttribute(row))
  }
  return out
}

/** @throws NotFoundError with code ATTRIBUTE_NOT_FOUND. */
export async function getAttribute(db: ReadDb, uuid: string): Promise<Attribute> {
  const row = await db
    .selectFrom('attributes')
    .selectAll()
    .where('uuid', '=', uuid)
    .executeTakeFirst()
  if (!row) throw attributeNotFound(uuid)
  return toAttribute(row)
}

/** The NotFoundError (code ATTRIBUTE_NOT_FOUND) of a missing attribute; deleteAttribute throws it too. */
export function attributeNotFound(uuid: string): NotFoundError {
  return new NotFoundError(`attribute ${uuid} not found`, {
    code: 'ATTRIBUTE_NOT_FOUND',
    details: { uuid },
  })
}
