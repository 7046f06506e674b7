/**
 * Migration 0012 on a database populated by the previous schema: rows written the way the
 * conductor wrote them before stable identities (random uuids), with a bound ARQ and a provider
 * in Placement; after the migration every device is remembered under its control path, and a
 * report (now with serials) keeps every uuid.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { Kysely } from 'kysely'
import { pathKey } from '../domain/device-identity.js'
import { deployableRpUuid, newUuid } from '../domain/ids.js'
import { canonicalJson, type DiscoveredDevice } from '../domain/inventory/inventory.js'
import { ingestSnapshot } from '../../test/support/ingest.js'
import { sampleDevice } from '../../test/support/sample-inventory.js'
import { testDialects } from '../../test/support/db.js'
import { migrateTo } from './core/migrate.js'
import type { Database } from './core/schema.js'

const HOST = 'h1'
const T0 = '2024-01-01T00:00:00.000000+00:00'
const T1 = '2024-01-02T00:00:00.000000+00:00'

/** Writes `devices` as schema 0011 held them: random uuids, lifecycle active. */
async function insertTheOldWay(db: Kysely<Database>, devices: DiscoveredDevice[]): Promise<void> {
  for (const d of devices) {
    await db
      .insertInto('devices')
      .values({
        uuid: newUuid(),
        type: d.type,
        vendor: d.vendor,
        model: d.model,
        std_board_info: d.stdBoardInfo === null ? null : canonicalJson(d.stdBoardInfo),
        vendor_board_info: d.vendorBoardInfo === null ? null : canonicalJson(d.vendorBoardInfo),
        hostname: HOST,
        lifecycle: 'active',
        lifecycle_reason: null,
        cpid_type: 'PCI',
        cpid_info: canonicalJson(d.controlPath.info),
        created_at: T0,
        updated_at: null,
      })
      .execute()
    const { id: deviceId } = await db
      .selectFrom('devices')
      .select('id')
      .where('cpid_info', '=', canonicalJson(d.controlPath.info))
      .executeTakeFirstOrThrow()
    for (const dep of d.deployables) {
      await db
        .insertInto('deployables')
        .values({
          uuid: newUuid(),
          device_id: deviceId,
          parent_id: null,
          root_id: null,
          name: dep.name,
          num_accelerators: dep.numAccelerators,
          rp_uuid: deployableRpUuid(HOST, dep.name),
          driver_name: dep.driverName,
          bitstream_id: null,
          created_at: T0,
          updated_at: null,
        })
        .execute()
      const { id: deployableId } = await db
        .selectFrom('deployables')
        .select('id')
        .where('name', '=', dep.name)
        .executeTakeFirstOrThrow()
      await db
        .insertInto('attributes')
        .values(
          dep.attributes.map((a) => ({
            uuid: newUuid(),
            deployable_id: deployableId,
            ...a,
            created_at: T0,
            updated_at: null,
          })),
        )
        .execute()
      await db
        .insertInto('attach_handles')
        .values(
          dep.attachHandles.map((h) => ({
            uuid: newUuid(),
            deployable_id: deployableId,
            attach_type: h.type,
            attach_info: canonicalJson(h.info),
            created_at: T0,
            updated_at: null,
          })),
        )
        .execute()
    }
  }
}

/** Every uuid of the inventory tables, by table, in id order. */
async function uuids(db: Kysely<Database>) {
  const of = async (t: 'devices' | 'deployables' | 'attributes' | 'attach_handles') =>
    (await db.selectFrom(t).select('uuid').orderBy('id').execute()).map((r) => r.uuid)
  return {
    devices: await of('devices'),
    deployables: await of('deployables'),
    attributes: await of('attributes'),
    handles: await of('attach_handles'),
  }
}

for (const dialect of await testDialects()) {
  await test(
    `migration 0012 remembers existing devices and keeps every uuid on ${dialect.name}`,
    { skip: dialect.skip },
    async () => {
      const handle = await dialect.create()
      const { db } = handle
      try {
        // Back to the previous schema (0012's down), as a database that was never upgraded.
        await migrateTo(handle, '0011-quota-projects')
        const tables = async () => (await db.introspection.getTables()).map((t) => t.name)
        assert.ok(!(await tables()).includes('device_identities'))

        const devices = [sampleDevice(HOST, 0), sampleDevice(HOST, 1), sampleDevice(HOST, 2)]
        await insertTheOldWay(db, devices)
        // A bound ARQ on device 0's first handle; device 1's provider is in Placement.
        const held = await db
          .selectFrom('attach_handles')
          .select(['id', 'deployable_id', 'uuid'])
          .orderBy('id')
          .executeTakeFirstOrThrow()
        await db
          .insertInto('accelerator_requests')
          .values({
            uuid: newUuid(),
            state: 'Bound',
            device_profile_id: null,
            device_profile_group_id: 0,
            project_id: 'p',
            hostname: HOST,
            device_rp_uuid: deployableRpUuid(HOST, devices[0]!.deployables[0]!.name),
            instance_uuid: null,
            attach_handle_id: held.id,
            deployable_id: held.deployable_id,
            created_at: T0,
            updated_at: null,
          })
          .execute()
        await db
          .updateTable('deployables')
          .set({ placement_hash: 'h' })
          .where('name', '=', devices[1]!.deployables[0]!.name)
          .execute()
        const before = await uuids(db)

        assert.deepEqual((await migrateTo(handle, '0012-device-identities')).applied, [
          '0012-device-identities',
        ])
        const rows = await db
          .selectFrom('device_identities')
          .select(['hostname', 'identity_key', 'device_uuid', 'lifecycle', 'status'])
          .orderBy('identity_key')
          .execute()
        assert.deepEqual(
          rows,
          devices
            .map((d, i) => ({
              hostname: HOST,
              identity_key: pathKey(canonicalJson(d.controlPath.info)),
              device_uuid: before.devices[i]!,
              lifecycle: 'active',
              status: 'enabled',
            }))
            .sort((a, b) => a.identity_key.localeCompare(b.identity_key)),
        )

        // The upgraded agent reports serials now (GPUs), and the same inventory otherwise.
        const withSerials = devices.map((d, i) => (i % 2 === 0 ? { ...d, serial: `SN-${i}` } : d))
        const report = { host: HOST, hash: 'x', devices: withSerials }
        const first = await ingestSnapshot(db, report, { autoActivate: false, now: T1 })
        assert.deepEqual([first.added, first.removed, first.pending], [0, 0, 0])
        assert.deepEqual(await uuids(db), before)
        const keys = await db
          .selectFrom('device_identities')
          .select(['identity_key', 'device_uuid'])
          .orderBy('identity_key')
          .execute()
        assert.deepEqual(
          keys.map((k) => [k.identity_key.split(':')[0], k.device_uuid]).sort(),
          [
            ['path', before.devices[1]!],
            ['serial', before.devices[0]!],
            ['serial', before.devices[2]!],
          ].sort(),
        )
        assert.equal(
          (
            await db
              .selectFrom('accelerator_requests')
              .select('attach_handle_id')
              .executeTakeFirstOrThrow()
          ).attach_handle_id,
          held.id,
        )

        // Device 2 (free) is uninstalled and reinstalled: its pre-migration uuid comes back, active.
        const without = { ...report, devices: withSerials.slice(0, 2) }
        assert.equal(
          (await ingestSnapshot(db, without, { autoActivate: false, now: T1 })).removed,
          1,
        )
        const again = await ingestSnapshot(db, report, { autoActivate: false, now: T1 })
        assert.equal(again.added, 1)
        const dev2 = await db
          .selectFrom('devices')
          .select(['uuid', 'lifecycle'])
          .where('cpid_info', '=', canonicalJson(devices[2]!.controlPath.info))
          .executeTakeFirstOrThrow()
        assert.deepEqual(dev2, { uuid: before.devices[2]!, lifecycle: 'active' })
      } finally {
        await handle.close()
      }
    },
  )
}
