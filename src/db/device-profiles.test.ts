import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ConflictError, NotFoundError } from '../domain/errors.js'
import { createDeviceProfile, deleteDeviceProfiles } from './device-profiles.js'
import {
  getDeviceProfile,
  getDeviceProfileByName,
  listDeviceProfiles,
} from './reads/device-profile-reads.js'
import { testDialects } from '../../test/support/db.js'

const NOW = '2024-01-01T00:00:00.000000+00:00'
const uuid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`
const groups = [{ 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required' }]

for (const dialect of await testDialects()) {
  await test(
    `device profiles: create, duplicates, list, delete all-or-nothing on ${dialect.name}`,
    { skip: dialect.skip },
    async () => {
      const handle = await dialect.create()
      try {
        const { db } = handle
        const p1 = await createDeviceProfile(
          db,
          { uuid: uuid(1), name: 'fpga', description: 'one FPGA', groups },
          NOW,
        )
        assert.deepEqual(
          { ...p1, id: 0 },
          {
            id: 0,
            uuid: uuid(1),
            name: 'fpga',
            description: 'one FPGA',
            groups,
            createdAt: NOW,
            updatedAt: null,
          },
        )
        const row = await db
          .selectFrom('device_profiles')
          .select('profile_json')
          .executeTakeFirstOrThrow()
        assert.deepEqual(JSON.parse(row.profile_json), { groups })
        await createDeviceProfile(
          db,
          { uuid: uuid(2), name: 'gpu', description: null, groups: [{ 'resources:PGPU': '1' }] },
          NOW,
        )
        await createDeviceProfile(
          db,
          { uuid: uuid(3), name: 'qat', description: null, groups: [] },
          NOW,
        )

        const dup = (field: string) => (err: unknown) =>
          err instanceof ConflictError && err.details?.field === field
        await assert.rejects(
          createDeviceProfile(db, { uuid: uuid(9), name: 'fpga', description: null, groups }, NOW),
          dup('name'),
        )
        await assert.rejects(
          createDeviceProfile(db, { uuid: uuid(1), name: 'other', description: null, groups }, NOW),
          dup('uuid'),
        )

        assert.deepEqual(
          (await listDeviceProfiles(db)).map((p) => p.name),
          ['fpga', 'gpu', 'qat'],
        )
        assert.deepEqual(
          (await listDeviceProfiles(db, { names: ['qat', 'fpga', 'nope'] })).map((p) => p.name),
          ['fpga', 'qat'],
        )
        assert.deepEqual(await listDeviceProfiles(db, { names: [] }), [])
        assert.deepEqual(await getDeviceProfile(db, uuid(1)), p1)
        assert.deepEqual(await getDeviceProfileByName(db, 'fpga'), p1)
        await assert.rejects(getDeviceProfile(db, uuid(8)), { code: 'DEVICE_PROFILE_NOT_FOUND' })
        await assert.rejects(getDeviceProfileByName(db, 'nope'), {
          code: 'DEVICE_PROFILE_NOT_FOUND',
        })

        // A missing one: nothing is deleted, and the error names it.
        await assert.rejects(deleteDeviceProfiles(db, [uuid(1), uuid(7)]), (err: unknown) => {
          assert.ok(err instanceof NotFoundError)
          assert.equal(err.details?.uuid, uuid(7))
          return true
        })
        // One in use by an accelerator request: nothing is deleted either.
        await db
          .insertInto('accelerator_requests')
          .values({
            uuid: uuid(50),
            state: 'Initial',
            device_profile_id: p1.id,
            device_profile_group_id: 0,
            project_id: null,
            hostname: null,
            device_rp_uuid: null,
            instance_uuid: null,
            attach_handle_id: null,
            deployable_id: null,
            created_at: NOW,
            updated_at: null,
          })
          .execute()
        await assert.rejects(deleteDeviceProfiles(db, [uuid(2), uuid(1)]), (err: unknown) => {
          assert.ok(err instanceof ConflictError)
          assert.equal(err.details?.uuid, uuid(1))
          return true
        })
        assert.equal((await listDeviceProfiles(db)).length, 3)

        await deleteDeviceProfiles(db, [uuid(2), uuid(3), uuid(3)])
        assert.deepEqual(
          (await listDeviceProfiles(db)).map((p) => p.name),
          ['fpga'],
        )
      } finally {
        await handle.close()
      }
    },
  )
}
