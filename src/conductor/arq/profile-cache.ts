/**
 * Device profiles by row id, for one conductor's binds and deletes (issue 28: their lookup costs no
 * statement once a profile is known). Exact: a profile's row is never updated, its id is never
 * given again (SQLite's AUTOINCREMENT, PostgreSQL's sequence, InnoDB's persistent counter), and it
 * cannot be deleted while a request names it (RESTRICT), so a row read committed stays true for
 * every request that names its id. Only rows read committed, outside any transaction, are kept
 * (the profile a create read by name); a miss is read through the caller's transaction and not
 * kept (it may not be committed yet: made in the same batch). By name, a kept profile is right as
 * long as it exists (names are unique), which a create's INSERT proves by its foreign key.
 */
import type { WriteTrx } from '../../db/core/group-commit.js'
import { listDeviceProfilesById } from '../../db/reads/device-profile-reads.js'
import type { DeviceProfile } from '../../domain/device-profile.js'

export interface ProfileCache {
  /** Keeps a profile read outside any transaction (committed). */
  remember(profile: DeviceProfile): void
  /** A kept profile of this name (the caller proves it still exists: `forget` it if not). */
  byName(name: string): DeviceProfile | undefined
  /** Drops a profile found deleted. */
  forget(profile: DeviceProfile): void
  /** The profiles with these ids that exist (as `listDeviceProfilesById`, in id order). */
  byIds(trx: WriteTrx, ids: readonly number[]): Promise<DeviceProfile[]>
}

/** At most `max` profiles are kept (then it starts afresh). */
export function createProfileCache(max = 10_000): ProfileCache {
  const kept = new Map<number, DeviceProfile>()
  const named = new Map<string, DeviceProfile>()
  return {
    remember(p) {
      if (kept.size >= max) {
        kept.clear()
        named.clear()
      }
      kept.set(p.id, p)
      named.set(p.name, p)
    },
    byName: (name) => named.get(name),
    forget(p) {
      kept.delete(p.id)
      if (named.get(p.name) === p) named.delete(p.name)
    },
    async byIds(trx, ids) {
      const unique = [...new Set(ids)]
      const missing = unique.filter((id) => !kept.has(id))
      const read = await listDeviceProfilesById(trx, missing)
      const found = unique.flatMap((id) => kept.get(id) ?? [])
      return [...found, ...read].sort((a, b) => a.id - b.id)
    },
  }
}
