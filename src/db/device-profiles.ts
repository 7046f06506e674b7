/** Device profiles: named lists of request groups, stored as `{"groups":[…]}` in profile_json. */
import type { Kysely } from 'kysely'
import type { ReadDb } from './core/connection.js'
import { ConflictError, NotFoundError } from '../domain/errors.js'
import type { DeviceProfile } from '../domain/device-profile.js'
import { translateDbError } from './core/errors.js'
import { jsonMemo } from './core/json-memo.js'
import { paginate, type PageOptions, type PageSpec } from './core/pagination.js'
import { precompile } from './core/precompiled.js'
import type { Database, DeviceProfileRow } from './core/schema.js'

/** `profile_json`, parsed once per distinct text (see json-memo.ts). */
const parseProfileJson = jsonMemo<{ groups?: Record<string, string>[] }>()

/** Maps a `device_profiles` row to the domain type. */
export function toDeviceProfile(row: DeviceProfileRow): DeviceProfile {
  const parsed = parseProfileJson(row.profile_json)
  return {
    id: row.id,
    uuid: row.uuid,
    name: row.name,
    description: row.description,
    groups: parsed.groups ?? [],
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

// The API's fixed-shape reads, precompiled (see precompiled.ts); a name filter varies in length.
const selectAll = precompile((db: ReadDb) =>
  db.selectFrom('device_profiles').selectAll().orderBy('id'),
)
const selectByUuid = precompile((db: ReadDb, uuid: string) =>
  db.selectFrom('device_profiles').selectAll().where('uuid', '=', uuid),
)
const selectByName = precompile((db: ReadDb, name: string) =>
  db.selectFrom('device_profiles').selectAll().where('name', '=', name),
)

export const DEVICE_PROFILE_SORT_KEYS = ['id', 'name', 'created_at'] as const
export type DeviceProfileSortKey = (typeof DEVICE_PROFILE_SORT_KEYS)[number]

const PAGE: PageSpec<DeviceProfileSortKey> = {
  table: 'device_profiles',
  keys: DEVICE_PROFILE_SORT_KEYS,
  nullable: [],
  notFoundCode: 'DEVICE_PROFILE_NOT_FOUND',
}

/**
 * Lists device profiles in id order (or paged: `limit`, `marker`, `sort_key`, `sort_dir` as the
 * other lists); `names` keeps only those (an empty list matches none).
 * @throws NotFoundError (field marker) for an unknown marker
 */
export async function listDeviceProfiles(
  db: ReadDb,
  filter: { names?: string[] } & PageOptions<DeviceProfileSortKey> = {},
): Promise<DeviceProfile[]> {
  const { names, ...page } = filter
  const paged = Object.values(page).some((v) => v !== undefined)
  if (names === undefined && !paged) return (await selectAll(db)).map(toDeviceProfile)
  if (names !== undefined && names.length === 0) return []
  let qb = db.selectFrom('device_profiles').selectAll()
  if (names !== undefined) qb = qb.where('name', 'in', names)
  qb = await paginate(db, qb, PAGE, page)
  return (await qb.execute()).map(toDeviceProfile)
}

/** @throws NotFoundError with code DEVICE_PROFILE_NOT_FOUND. */
export async function getDeviceProfile(db: ReadDb, uuid: string): Promise<DeviceProfile> {
  const row = await selectByUuid.first(db, uuid)
  if (!row) throw notFound('uuid', uuid)
  return toDeviceProfile(row)
}

/** The profiles with these row ids (accelerator requests name theirs by id), in id order. */
export async function listDeviceProfilesById(
  db: ReadDb,
  ids: readonly number[],
): Promise<DeviceProfile[]> {
  if (ids.length === 0) return []
  const rows = await db
    .selectFrom('device_profiles')
    .selectAll()
    .where('id', 'in', [...ids])
    .orderBy('id')
    .execute()
  return rows.map(toDeviceProfile)
}

/** @throws NotFoundError with code DEVICE_PROFILE_NOT_FOUND. */
export async function getDeviceProfileByName(db: ReadDb, name: string): Promise<DeviceProfile> {
  const row = await selectByName.first(db, name)
  if (!row) throw notFound('name', name)
  return toDeviceProfile(row)
}

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
  if (missing !== undefined) throw notFound('uuid', missing)
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

function notFound(field: 'uuid' | 'name', value: string): NotFoundError {
  return new NotFoundError(`device profile ${value} not found`, {
    code: 'DEVICE_PROFILE_NOT_FOUND',
    details: { field, [field]: value },
  })
}

function inUse(uuid: string | undefined): ConflictError {
  return new ConflictError(`device profile ${uuid} is used by an accelerator request`, {
    code: 'DEVICE_PROFILE_IN_USE',
    details: { field: 'uuid', uuid },
  })
}
