/**
 * Device profiles (named lists of request groups, stored as `{"groups":[…]}` in profile_json), read:
 * list, get by uuid or name, by row ids. Writes are src/db/device-profiles.ts.
 */
import type { ReadDb } from '../core/connection.js'
import { NotFoundError } from '../../domain/errors.js'
import type { DeviceProfile } from '../../domain/device-profile.js'
import { jsonMemo } from '../core/json-memo.js'
import { paginate, type PageOptions, type PageSpec } from '../core/pagination.js'
import { precompile } from '../core/precompiled.js'
import type { DeviceProfileRow } from '../core/schema.js'

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
  if (!row) throw deviceProfileNotFound('uuid', uuid)
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
  if (!row) throw deviceProfileNotFound('name', name)
  return toDeviceProfile(row)
}

/** The NotFoundError (code DEVICE_PROFILE_NOT_FOUND) of a missing profile; deleteDeviceProfiles throws it too. */
export function deviceProfileNotFound(field: 'uuid' | 'name', value: string): NotFoundError {
  return new NotFoundError(`device profile ${value} not found`, {
    code: 'DEVICE_PROFILE_NOT_FOUND',
    details: { field, [field]: value },
  })
}
