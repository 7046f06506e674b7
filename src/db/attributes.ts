/** Attributes of deployables, written: add one, delete one. Reads are src/db/reads/attribute-reads.ts. */
import type { Kysely } from 'kysely'
import type { Attribute } from '../domain/inventory/inventory.js'
import { translateDbError } from './core/errors.js'
import type { Database } from './core/schema.js'
import { attributeNotFound, getAttribute } from './reads/attribute-reads.js'

/**
 * Adds one attribute to a deployable.
 * @throws NotFoundError (`details.field` 'deployable_id') when the deployable does not exist.
 * @throws ConflictError (`details.field` 'key') when the deployable already has that key.
 */
export async function createAttribute(
  db: Kysely<Database>,
  input: { deployableId: number; key: string; value: string },
  meta: { now: string; uuid: string },
): Promise<Attribute> {
  try {
    await db
      .insertInto('attributes')
      .values({
        uuid: meta.uuid,
        deployable_id: input.deployableId,
        key: input.key,
        value: input.value,
        created_at: meta.now,
        updated_at: null,
      })
      .execute()
  } catch (err) {
    throw translateDbError(err, {
      entity: 'attribute',
      unique: { key: 'key', attributes_dep_key_uq: 'key', deployable_id: 'key', uuid: 'uuid' },
      missingParent: 'deployable_id',
      codes: { conflict: 'ATTRIBUTE_EXISTS', notFound: 'DEPLOYABLE_NOT_FOUND' },
    })
  }
  return getAttribute(db, meta.uuid)
}

/** @throws NotFoundError with code ATTRIBUTE_NOT_FOUND. */
export async function deleteAttribute(db: Kysely<Database>, uuid: string): Promise<void> {
  const result = await db.deleteFrom('attributes').where('uuid', '=', uuid).executeTakeFirst()
  if (Number(result.numDeletedRows) === 0) throw attributeNotFound(uuid)
}
