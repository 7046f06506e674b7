import { test } from 'node:test'
import assert from 'node:assert/strict'
import { getAccelerator, listAccelerators } from './v1-accelerators.js'
import { ingestSnapshot } from '../../../test/support/ingest.js'
import { sampleSnapshot } from '../../../test/support/sample-inventory.js'
import { testDialects } from '../../../test/support/db.js'

const T0 = '2024-01-01T00:00:00.000000+00:00'
const VM = 'aaaaaaaa-0000-4000-8000-000000000001'

for (const dialect of await testDialects()) {
  await test(
    `v1 accelerators: a view over deployables, filtered and paged, on ${dialect.name}`,
    { skip: dialect.skip },
    async () => {
      const handle = await dialect.create()
      try {
        const { db } = handle
        await ingestSnapshot(db, sampleSnapshot('host-a', 3), { autoActivate: false, now: T0 })
        await ingestSnapshot(db, sampleSnapshot('host-b', 2), { autoActivate: true, now: T0 })
        const all = await listAccelerators(db)
        assert.deepEqual(
          all.map((a) => [a.hostname, a.deviceType, a.lifecycle]),
          [
            ['host-a', 'GPU', 'inactive'],
            ['host-a', 'FPGA', 'inactive'],
            ['host-a', 'GPU', 'inactive'],
            ['host-b', 'GPU', 'active'],
            ['host-b', 'FPGA', 'active'],
          ],
        )
        assert.deepEqual(
          all[0]!.attributes.map((x) => [x.key, x.value]),
          [
            ['rc', 'PGPU'],
            ['trait0', 'CUSTOM_GPU_NVIDIA'],
          ],
        )
        assert.equal(all[1]!.address, '0000:11:00.0')
        assert.deepEqual(
          (await listAccelerators(db, { hostname: 'host-b', deviceType: 'FPGA' })).map(
            (a) => a.uuid,
          ),
          [all[4]!.uuid],
        )
        const byName = [...all].sort((a, b) => (a.name < b.name ? -1 : 1))
        const page = await listAccelerators(db, {
          sortKey: 'name',
          limit: 2,
          marker: byName[1]!.uuid,
        })
        assert.deepEqual(
          page.map((a) => a.uuid),
          byName.slice(2, 4).map((a) => a.uuid),
        )
        await assert.rejects(listAccelerators(db, { marker: 'nope' }), {
          code: 'ACCELERATOR_NOT_FOUND',
        })

        // A bound request names its instance in attached_to.
        const dep = await db
          .selectFrom('deployables')
          .select('id')
          .where('uuid', '=', all[3]!.uuid)
          .executeTakeFirstOrThrow()
        await db
          .insertInto('device_profiles')
          .values({
            uuid: 'cccccccc-0000-4000-8000-000000000001',
            name: 'p',
            description: null,
            profile_json: '{"groups":[]}',
            created_at: T0,
            updated_at: null,
          })
          .execute()
        const dp = await db.selectFrom('device_profiles').select('id').executeTakeFirstOrThrow()
        await db
          .insertInto('accelerator_requests')
          .values({
            uuid: 'a0000000-0000-4000-8000-000000000001',
            state: 'Bound',
            device_profile_id: dp.id,
            device_profile_group_id: 0,
            project_id: null,
            hostname: 'host-b',
            device_rp_uuid: null,
            instance_uuid: VM,
            attach_handle_id: null,
            deployable_id: dep.id,
            created_at: T0,
            updated_at: null,
          })
          .execute()
        assert.deepEqual((await getAccelerator(db, all[3]!.uuid)).attachedTo, [VM])
        assert.deepEqual((await getAccelerator(db, all[4]!.uuid)).attachedTo, [])
        await assert.rejects(getAccelerator(db, 'nope'), { code: 'ACCELERATOR_NOT_FOUND' })
      } finally {
        await handle.close()
      }
    },
  )
}
