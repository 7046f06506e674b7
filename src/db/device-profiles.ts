/** Device profiles, written: create one, delete some (all or nothing). Reads are src/db/reads/device-profile-reads.ts. */
import type { Kysely } from 'kysely'
import { ConflictError } from '../domain/errors.js'
import type { DeviceProfile } from '../domain/device-profile.js'
import { translateDbError } from './core/errors.js'
import type { Database } from './core/schema.js'
import { deviceProfileNotFound, getDeviceProfile } from './reads/device-profile-reads.js'

/**
 * Stores a new profile. Group key order is kept as given (Nova and the API echo it back).
 * @throws ConflictError (code DEVICE_PROFILE_EXISTS, `details.field` 'name' or 'uuid') on a duplicate.
 */
export async function createDeviceProfile(
  db: Kysely<Database>,
  input: {
    uuid: string
    name: string
    description: string | null
    groups: Record<string, string>[]
  },
  now: string,
): Promise<DeviceProfile> {
  try {
    await db
      .insertInto('device_profiles')
      .values({
        uuid: input.uuid,
        name: input.name,
        description: input.description,
        profile_json: JSON.stringify({ groups: input.groups }),
        created_at: now,
        updated_at: null,
      })
      .execute()
  } catch (err) {
    throw translateDbError(err, {
      entity: 'device profile',
      unique: {
        name: 'name',
        uuid: 'uuid',
        device_profiles_name_key: 'name',
        device_profiles_uuid_key: 'uuid',
      },
      codes: { conflict: 'DEVICE_PROFILE_EXISTS' },
    })
  }
  return getDeviceProfile(db, input.uuid)
}

/**
 * Deletes profiles by uuid, all or nothing (checks first, then one DELETE statement).
 * @throws NotFoundError (code DEVICE_PROFILE_NOT_FOUND) naming the first missing uuid.
 * @throws ConflictError (code DEVICE_PROFILE_IN_USE) naming a profile that an accelerator request uses.
 */
export async function deleteDeviceProfiles(db: Kysely<Database>, uuids: string[]): Promise<void> {
  const wanted = [...new Set(uuids)]
  if (wanted.length === 0) return
  const rows = await db
    .selectFrom('device_profiles')
    .select(['id', 'uuid'])
    .where('uuid', 'in', wanted)
    .execute()
  const found = new Map(rows.map((r) => [r.uuid, r.id]))
  const missing = wanted.find((u) => !found.has(u))
  if (missing !== undefined) throw deviceProfileNotFound('uuid', missing)
  const ids = [...found.values()]
  const used = await db
    .selectFrom('accelerator_requests')
    .select('device_profile_id')
    .where('device_profile_id', 'in', ids)
    .limit(1)
    .executeTakeFirst()
  if (used) {
    const uuid = rows.find((r) => r.id === used.device_profile_id)?.uuid
    throw inUse(uuid)
  }
  try {
    await db.deleteFrom('device_profiles').where('id', 'in', ids).execute()
  } catch (err) {
    // An accelerator request created between the check and the delete.
    throw translateDbError(err, {
      entity: 'device profile',
      referenced: true,
      codes: { conflict: 'DEVICE_PROFILE_IN_USE' },
    })
  }
}

function inUse(uuid: string | undefined): ConflictError {
  return new ConflictError(`device profile ${uuid} is used by an accelerator request`, {
    code: 'DEVICE_PROFILE_IN_USE',
    details: { field: 'uuid', uuid },
  })
}
