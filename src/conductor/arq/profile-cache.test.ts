/**
 * The conductor's cache of device profiles (profile-cache.ts) on every dialect: a create after the
 * profile of that name was deleted and made again uses the new profile (the INSERT's foreign key
 * catches the old one), and one after it was deleted for good is refused as before.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { testDialects } from '../../../test/support/db.js'
import { createGroupCommitter } from '../../db/core/group-commit.js'
import { createDeviceProfile, deleteDeviceProfiles } from '../../db/device-profiles.js'
import { NotFoundError } from '../../domain/errors.js'
import { noopLogger } from '../../domain/logger.js'
import { createArqService } from './arqs.js'

const T0 = '2026-11-28T06:00:00.000000+00:00'
const clock = { now: () => new Date('2026-11-28T06:00:10Z') }
const group = { 'resources:FPGA': '1' }
const profile = (uuid: string, groups: Record<string, string>[]) => ({
  uuid,
  name: 'dp',
  description: null,
  groups,
})

for (const dialect of await testDialects()) {
  void describe(`profile cache on ${dialect.name}`, { skip: dialect.skip }, () => {
    void it('a profile deleted and made again under its name is read afresh', async () => {
      const db = await dialect.create()
      const committer = createGroupCommitter(db, { intervalMs: 0, maxBatch: 8 })
      const arqs = createArqService({ db, committer, log: noopLogger, clock })
      const create = () => arqs.createArqs({ deviceProfileName: 'dp', projectId: null, maxArqs: 8 })
      try {
        const first = await createDeviceProfile(
          db.db,
          profile('00000000-0000-4000-8000-0000000000d1', [group]),
          T0,
        )
        const one = await create()
        assert.equal(one.length, 1)
        assert.equal(one[0]!.deviceProfileId, first.id)
        await arqs.deleteArqs({ uuids: one.map((a) => a.uuid) })
        await deleteDeviceProfiles(db.db, ['00000000-0000-4000-8000-0000000000d1'])
        const second = await createDeviceProfile(
          db.db,
          profile('00000000-0000-4000-8000-0000000000d2', [group, group]),
          T0,
        )
        const two = await create()
        assert.deepEqual(
          two.map((a) => [a.deviceProfileId, a.deviceProfileGroupId]),
          [
            [second.id, 0],
            [second.id, 1],
          ],
        )
        await arqs.deleteArqs({ uuids: two.map((a) => a.uuid) })
        await deleteDeviceProfiles(db.db, ['00000000-0000-4000-8000-0000000000d2'])
        await assert.rejects(
          create(),
          (err) => err instanceof NotFoundError && err.code === 'DEVICE_PROFILE_NOT_FOUND',
        )
      } finally {
        await committer.close()
        await db.close()
      }
    })
  })
}
