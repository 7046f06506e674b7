import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { Kysely, KyselyPlugin } from 'kysely'
import { deployableRpUuid } from '../domain/ids.js'
import type { InventorySnapshot } from '../domain/inventory/inventory.js'
import { ingestSnapshot } from '../../test/support/ingest.js'
import { sampleSnapshot } from '../../test/support/sample-inventory.js'
import type { Database } from './core/schema.js'
import { testDialects } from '../../test/support/db.js'
import { MISSING_REASON } from '../domain/inventory/inventory-diff.js'

const T0 = '2024-01-01T00:00:00.000000+00:00'
const T1 = '2024-01-02T00:00:00.000000+00:00'
/** Ingests a snapshot; resolves with its counts (health transitions are checked in health tests). */
const sync = async (db: Kysely<Database>, s: InventorySnapshot, now = T0, autoActivate = false) => {
  const { added, updated, removed, pending } = await ingestSnapshot(db, s, { autoActivate, now })
  return { added, updated, removed, pending }
}

/** Row counts of the four inventory tables. */
async function counts(db: Kysely<Database>) {
  const n = async (t: 'devices' | 'deployables' | 'attributes' | 'attach_handles') =>
    Number(
      (
        await db
          .selectFrom(t)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    )
  return [
    await n('devices'),
    await n('deployables'),
    await n('attributes'),
    await n('attach_handles'),
  ]
}

/** A Kysely over the same connection that counts the queries it runs. */
function counting(db: Kysely<Database>) {
  const seen = { queries: 0 }
  const plugin: KyselyPlugin = {
    transformQuery: (args) => (seen.queries++, args.node),
    transformResult: (args) => Promise.resolve(args.result),
  }
  return { db: db.withPlugin(plugin), seen }
}

for (const dialect of await testDialects()) {
  await test(
    `inventory sync: add, unchanged, modify, remove on ${dialect.name}`,
    { skip: dialect.skip },
    async () => {
      const handle = await dialect.create()
      try {
        const { db } = handle
        const snap = sampleSnapshot('h1', 3)
        assert.deepEqual(await sync(db, snap), { added: 3, updated: 0, removed: 0, pending: 0 })
        assert.deepEqual(await counts(db), [3, 3, 6, 6])
        const devices = await db.selectFrom('devices').selectAll().orderBy('id').execute()
        assert.deepEqual(
          devices.map((d) => [d.lifecycle, d.health, d.cpid_type]),
          Array(3).fill(['inactive', 'ok', 'PCI']),
        )
        assert.equal(
          devices[0]!.cpid_info,
          '{"bus":"10","device":"00","domain":"0000","function":"0"}',
        )
        assert.equal(devices[0]!.std_board_info, '{"class":"0302"}')
        const deps = await db.selectFrom('deployables').selectAll().orderBy('id').execute()
        assert.equal(deps[0]!.rp_uuid, deployableRpUuid('h1', 'h1_0000:10:00.0'))

        // The same snapshot again: nothing changes, not even updated_at.
        const { db: cdb, seen } = counting(db)
        assert.deepEqual(await sync(cdb, snap, T1), {
          added: 0,
          updated: 0,
          removed: 0,
          pending: 0,
        })
        // Five reads of the rows, one of the host's remembered identities (docs/identity.md).
        assert.ok(seen.queries <= 6, `an unchanged report took ${seen.queries} queries`)
        assert.deepEqual(
          await db.selectFrom('devices').selectAll().orderBy('id').execute(),
          devices,
        )

        // Modify: more accelerators on device 0, an attribute value on 1, a new handle on 2.
        const changed = structuredClone(snap)
        changed.devices[0]!.deployables[0]!.numAccelerators = 4
        changed.devices[1]!.deployables[0]!.attributes[1]!.value = 'CUSTOM_CHANGED'
        changed.devices[2]!.deployables[0]!.attachHandles.push({
          type: 'PCI',
          info: { domain: '0000', bus: '12', device: '00', function: '7' },
        })
        changed.devices[2]!.vendor = 'beef'
        assert.deepEqual(await sync(db, changed, T1), {
          added: 0,
          updated: 3,
          removed: 0,
          pending: 0,
        })
        assert.deepEqual(await counts(db), [3, 3, 6, 7])
        const dep0 = await db
          .selectFrom('deployables')
          .selectAll()
          .where('id', '=', deps[0]!.id)
          .executeTakeFirstOrThrow()
        assert.deepEqual(
          [dep0.num_accelerators, dep0.updated_at, dep0.uuid],
          [4, T1, deps[0]!.uuid],
        )
        const attr = await db
          .selectFrom('attributes')
          .selectAll()
          .where('value', '=', 'CUSTOM_CHANGED')
          .execute()
        assert.deepEqual(
          attr.map((a) => [a.deployable_id, a.key]),
          [[deps[1]!.id, 'trait0']],
        )
        const dev2 = await db
          .selectFrom('devices')
          .selectAll()
          .where('id', '=', devices[2]!.id)
          .executeTakeFirstOrThrow()
        assert.deepEqual([dev2.vendor, dev2.updated_at], ['beef', T1])

        // Remove device 2: its deployable, attributes and handles go with it.
        const fewer = structuredClone(changed)
        fewer.devices.pop()
        assert.deepEqual(await sync(db, fewer, T1), {
          added: 0,
          updated: 0,
          removed: 1,
          pending: 0,
        })
        assert.deepEqual(await counts(db), [2, 2, 4, 4])

        // Another host's report leaves h1 alone; autoActivate makes its devices active.
        assert.deepEqual(await sync(db, sampleSnapshot('h2', 1), T1, true), {
          added: 1,
          updated: 0,
          removed: 0,
          pending: 0,
        })
        const h2 = await db
          .selectFrom('devices')
          .select('lifecycle')
          .where('hostname', '=', 'h2')
          .execute()
        assert.deepEqual(h2, [{ lifecycle: 'active' }])
        assert.deepEqual(await sync(db, { host: 'h1', hash: 'empty', devices: [] }, T1), {
          added: 0,
          updated: 0,
          removed: 2,
          pending: 0,
        })
        assert.deepEqual(await counts(db), [1, 1, 2, 2])
      } finally {
        await handle.close()
      }
    },
  )

  await test(
    `inventory sync: in-use devices are kept and marked failed on ${dialect.name}`,
    { skip: dialect.skip },
    async () => {
      const handle = await dialect.create()
      try {
        const { db } = handle
        const snap = sampleSnapshot('h1', 3)
        await sync(db, snap)
        const handles = await db.selectFrom('attach_handles').selectAll().orderBy('id').execute()
        const devices = await db.selectFrom('devices').selectAll().orderBy('id').execute()
        // Device 1: a handle marked in use. Device 0: a handle held by an accelerator request.
        await db
          .updateTable('attach_handles')
          .set({ in_use: 1 })
          .where('id', '=', handles[2]!.id)
          .execute()
        await db
          .insertInto('device_profiles')
          .values({
            uuid: 'dp-1',
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
            uuid: 'arq-1',
            state: 'Bound',
            device_profile_id: dp.id,
            device_profile_group_id: 0,
            project_id: null,
            hostname: 'h1',
            device_rp_uuid: null,
            instance_uuid: null,
            attach_handle_id: handles[0]!.id,
            deployable_id: null,
            created_at: T0,
            updated_at: null,
          })
          .execute()

        // Report without devices 0 and 1: both are kept and marked failed; device 2 stays untouched.
        const onlyLast = { ...snap, devices: [snap.devices[2]!] }
        assert.deepEqual(await sync(db, onlyLast, T1), {
          added: 0,
          updated: 2,
          removed: 0,
          pending: 2,
        })
        assert.deepEqual(await counts(db), [3, 3, 6, 6])
        const health = async () =>
          (
            await db
              .selectFrom('devices')
              .select(['health', 'lifecycle_reason'])
              .orderBy('id')
              .execute()
          ).map((d) => [d.health, d.lifecycle_reason])
        assert.deepEqual(await health(), [
          ['failed', MISSING_REASON],
          ['failed', MISSING_REASON],
          ['ok', null],
        ])
        // The same report again changes nothing.
        assert.deepEqual(await sync(db, onlyLast, T1), {
          added: 0,
          updated: 0,
          removed: 0,
          pending: 2,
        })

        // Device 1 frees its handle: the next report removes it. Device 0 comes back: it is healthy again.
        await db
          .updateTable('attach_handles')
          .set({ in_use: 0 })
          .where('id', '=', handles[2]!.id)
          .execute()
        assert.deepEqual(
          await sync(db, { ...snap, devices: [snap.devices[0]!, snap.devices[2]!] }, T1),
          {
            added: 0,
            updated: 1,
            removed: 1,
            pending: 0,
          },
        )
        assert.deepEqual(await health(), [
          ['ok', null],
          ['ok', null],
        ])
        assert.deepEqual(
          (await db.selectFrom('devices').select('id').orderBy('id').execute()).map((d) => d.id),
          [devices[0]!.id, devices[2]!.id],
        )

        // A held handle that vanishes from a device still present: kept, device marked failed.
        const lessHandles = structuredClone(snap)
        lessHandles.devices[0]!.deployables[0]!.attachHandles = []
        lessHandles.devices.splice(1, 1)
        assert.deepEqual(await sync(db, lessHandles, T1), {
          added: 0,
          updated: 1,
          removed: 0,
          pending: 0,
        })
        const kept = await db
          .selectFrom('attach_handles')
          .select('id')
          .where('deployable_id', '=', handles[0]!.deployable_id)
          .execute()
        assert.deepEqual(kept, [{ id: handles[0]!.id }])
        assert.deepEqual((await health())[0], ['failed', MISSING_REASON])
      } finally {
        await handle.close()
      }
    },
  )
}
