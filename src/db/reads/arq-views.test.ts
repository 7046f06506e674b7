import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { Kysely } from 'kysely'
import { expandProfileGroups } from '../../domain/arq.js'
import { getArqDetail, hasUnresolvedArqs, listArqDetails, RESOLVED_STATES } from './arq-views.js'
import { createArqs, updateArqStates } from '../arqs.js'
import { createDeviceProfile } from '../device-profiles.js'
import type { Database } from '../core/schema.js'
import { testDialects } from '../../../test/support/db.js'
import { claimAttachHandle } from '../attach-handles.js'

const T0 = '2024-01-01T00:00:00.000000+00:00'
const INSTANCE = 'aaaaaaaa-0000-4000-8000-000000000001'
const INFO = { bus: '10', device: '00', domain: '0000', function: '1' }

/** A deployable with one TEST_PCI handle, a profile asking for 3 FPGAs, and its 3 ARQs. */
async function seed(db: Kysely<Database>) {
  await db
    .insertInto('devices')
    .values({
      uuid: 'dddddddd-0000-4000-8000-000000000001',
      type: 'FPGA',
      vendor: '8086',
      model: 'A10',
      hostname: 'h',
      std_board_info: null,
      vendor_board_info: null,
      lifecycle_reason: null,
      cpid_type: 'PCI',
      cpid_info: '{}',
      created_at: T0,
      updated_at: null,
    })
    .execute()
  const dev = await db.selectFrom('devices').select('id').executeTakeFirstOrThrow()
  await db
    .insertInto('deployables')
    .values({
      uuid: 'eeeeeeee-0000-4000-8000-000000000001',
      device_id: dev.id,
      parent_id: null,
      root_id: null,
      name: 'h_dep',
      num_accelerators: 1,
      rp_uuid: null,
      driver_name: 'fake',
      bitstream_id: null,
      created_at: T0,
      updated_at: null,
    })
    .execute()
  const dep = await db.selectFrom('deployables').select('id').executeTakeFirstOrThrow()
  await db
    .insertInto('attach_handles')
    .values({
      uuid: 'ffffffff-0000-4000-8000-000000000001',
      deployable_id: dep.id,
      attach_type: 'TEST_PCI',
      attach_info: JSON.stringify(INFO),
      created_at: T0,
      updated_at: null,
    })
    .execute()
  const profile = await createDeviceProfile(
    db,
    {
      uuid: 'cccccccc-0000-4000-8000-000000000001',
      name: 'dp',
      description: null,
      groups: [{ 'resources:FPGA': '3' }],
    },
    T0,
  )
  const arqs = await createArqs(
    db,
    { profileId: profile.id, specs: expandProfileGroups(profile.groups, 10), projectId: null },
    { now: T0 },
  )
  return { depId: dep.id, arqs }
}

for (const dialect of await testDialects()) {
  await test(
    `arq views: joins, filters, paging on ${dialect.name}`,
    { skip: dialect.skip },
    async () => {
      const handle = await dialect.create()
      try {
        const db = handle.db
        const { depId, arqs } = await seed(db)
        const [a, b, c] = arqs.map((x) => x.uuid) as [string, string, string]
        const initial = await getArqDetail(db, a)
        assert.equal(initial.deviceProfileName, 'dp')
        assert.equal(initial.attachHandle, null)
        await assert.rejects(getArqDetail(db, 'nope'), {
          name: 'NotFoundError',
          code: 'ARQ_NOT_FOUND',
        })

        // a: Bound with the handle; b: BindStarted for the same instance; c: untouched.
        const h = await claimAttachHandle(db, depId)
        const set = { hostname: 'h', instanceUuid: INSTANCE }
        await updateArqStates(db, [a, b], 'BindStarted', { now: T0, set })
        await updateArqStates(db, [a], 'Bound', {
          now: T0,
          set: { attachHandleId: h!.id, deployableId: depId },
        })
        const bound = await getArqDetail(db, a)
        assert.deepEqual(bound.attachHandle, {
          uuid: 'ffffffff-0000-4000-8000-000000000001',
          type: 'TEST_PCI',
          info: INFO,
        })
        assert.equal(bound.state, 'Bound')

        const uuidsOf = (list: { uuid: string }[]) => list.map((x) => x.uuid)
        assert.deepEqual(uuidsOf(await listArqDetails(db)), [a, b, c])
        assert.deepEqual(uuidsOf(await listArqDetails(db, { instanceUuid: INSTANCE })), [a, b])
        assert.deepEqual(uuidsOf(await listArqDetails(db, { states: RESOLVED_STATES })), [a])
        assert.deepEqual(await listArqDetails(db, { states: [] }), [])
        assert.equal(await hasUnresolvedArqs(db, INSTANCE), true)
        await updateArqStates(db, [b], 'BindFailed', { now: T0 })
        assert.equal(await hasUnresolvedArqs(db, INSTANCE), false)
        assert.equal(await hasUnresolvedArqs(db, 'bbbbbbbb-0000-4000-8000-000000000001'), false)

        // Sorting by a nullable column (hostname: c has none, sorts first) and continuing after a marker.
        const byHost = await listArqDetails(db, { sortKey: 'hostname', limit: 2 })
        assert.deepEqual(uuidsOf(byHost), [c, a])
        assert.deepEqual(uuidsOf(await listArqDetails(db, { sortKey: 'hostname', marker: a })), [b])
        await assert.rejects(listArqDetails(db, { marker: 'nope' }), { code: 'ARQ_NOT_FOUND' })
      } finally {
        await handle.close()
      }
    },
  )
}
