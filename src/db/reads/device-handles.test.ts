import { test } from 'node:test'
import assert from 'node:assert/strict'
import { testDialects } from '../../../test/support/db.js'
import { ingestSnapshot } from '../../../test/support/ingest.js'
import { sampleSnapshot } from '../../../test/support/sample-inventory.js'
import { listDeviceHandles } from './device-handles.js'

const T0 = '2026-11-25T06:00:00.000000+00:00'
const ARQ = '5a1f0c36-1c4e-4b83-9a0e-6a4b7e0f4d01'
const VM = '7c1f0c36-1c4e-4b83-9a0e-6a4b7e0f4d02'

for (const dialect of await testDialects()) {
  await test(`a device's attach handles on ${dialect.name}`, { skip: dialect.skip }, async () => {
    const db = await dialect.create()
    try {
      await ingestSnapshot(db.db, sampleSnapshot('h1', 2, { handles: 4 }), {
        autoActivate: true,
        now: T0,
      })
      const [device] = await db.db
        .selectFrom('devices')
        .select(['id', 'uuid'])
        .orderBy('id')
        .limit(1)
        .execute()
      const handles = await db.db
        .selectFrom('attach_handles as h')
        .innerJoin('deployables as d', 'd.id', 'h.deployable_id')
        .select(['h.id', 'h.deployable_id'])
        .where('d.device_id', '=', device!.id)
        .orderBy('h.id')
        .execute()
      const [held, cleaning, failed] = handles.map((h) => h.id)
      await db.db.updateTable('attach_handles').set({ in_use: 1 }).where('id', '=', held!).execute()
      await db.db
        .insertInto('accelerator_requests')
        .values({
          uuid: ARQ,
          state: 'Bound',
          device_profile_id: null,
          device_profile_group_id: 0,
          project_id: 'p1',
          hostname: 'h1',
          device_rp_uuid: null,
          instance_uuid: VM,
          attach_handle_id: held!,
          deployable_id: handles[0]!.deployable_id,
          created_at: T0,
        })
        .execute()
      await db.db
        .updateTable('attach_handles')
        .set({ in_use: 1, clean_state: 'pending', clean_since: T0 })
        .where('id', '=', cleaning!)
        .execute()
      await db.db
        .updateTable('attach_handles')
        .set({ in_use: 1, clean_state: 'failed', clean_since: T0 })
        .where('id', '=', failed!)
        .execute()

      const got = await listDeviceHandles(db.db, device!.uuid)
      assert.ok(got !== undefined)
      assert.deepEqual(
        got.map((h) => [h.state, h.inUse, h.arqUuid, h.instanceUuid, h.projectId]),
        [
          ['in_use', true, ARQ, VM, 'p1'],
          ['cleaning', true, null, null, null],
          ['clean_failed', true, null, null, null],
          ['free', false, null, null, null],
        ],
      )
      assert.deepEqual(got[0]!.attachInfo, {
        domain: '0000',
        bus: '10',
        device: '00',
        function: '0',
      })
      assert.equal(got[0]!.attachType, 'PCI')
      assert.equal(got[0]!.deployableName, 'h1_0000:10:00.0')
      assert.equal(got[0]!.deployableId, Number(handles[0]!.deployable_id))
      assert.equal(got[1]!.cleanState, 'pending')
      assert.ok(got[1]!.cleanSince !== null)
      assert.equal(
        await listDeviceHandles(db.db, '00000000-0000-4000-8000-000000000000'),
        undefined,
      )
    } finally {
      await db.close()
    }
  })
}
