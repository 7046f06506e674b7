import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { Kysely } from 'kysely'
import { attachHandleUuid, deployableUuid, deviceUuid, pathKey } from '../domain/device-identity.js'
import {
  canonicalJson,
  type DiscoveredDevice,
  type InventorySnapshot,
} from '../domain/inventory/inventory.js'
import { ingestSnapshot } from '../../test/support/ingest.js'
import { sampleDevice } from '../../test/support/sample-inventory.js'
import { testDialects } from '../../test/support/db.js'
import type { Database } from './core/schema.js'

const HOST = 'h1'
const T0 = '2024-01-01T00:00:00.000000+00:00'
const T1 = '2024-01-02T00:00:00.000000+00:00'

/** Sample device n with a serial (or none), at PCI bus `bus` (hex) instead of its own. */
function card(
  n: number,
  serial: string | undefined,
  bus = (0x10 + n).toString(16),
): DiscoveredDevice {
  const d = sampleDevice(HOST, n)
  const at = (fn: string) => ({ domain: '0000', bus, device: '00', function: fn })
  d.controlPath = { type: 'PCI', info: at('0') }
  const dep = d.deployables[0]!
  dep.name = `${HOST}_0000:${bus}:00.0`
  dep.attachHandles = dep.attachHandles.map((h, i) => ({ ...h, info: at(String(i)) }))
  return serial === undefined ? d : { ...d, serial }
}

const snap = (devices: DiscoveredDevice[]): InventorySnapshot => ({
  host: HOST,
  hash: 'x',
  devices,
})
const sync = (db: Kysely<Database>, devices: DiscoveredDevice[], now = T0) =>
  ingestSnapshot(db, snap(devices), { autoActivate: false, now })

/** The host's devices by bus: uuid, lifecycle, status, and their deployables' and handles' uuids. */
async function state(db: Kysely<Database>) {
  const devices = await db.selectFrom('devices').selectAll().orderBy('cpid_info').execute()
  const out: Record<string, { uuid: string; lifecycle: string; status: string; deps: string[] }> =
    {}
  for (const d of devices) {
    const deps = await db
      .selectFrom('deployables as p')
      .leftJoin('attach_handles as h', 'h.deployable_id', 'p.id')
      .select(['p.uuid as dep', 'h.uuid as handle'])
      .where('p.device_id', '=', d.id)
      .orderBy('p.uuid')
      .orderBy('h.uuid')
      .execute()
    const bus = (JSON.parse(d.cpid_info) as { bus: string }).bus
    out[bus] = {
      uuid: d.uuid,
      lifecycle: d.lifecycle,
      status: d.status,
      deps: deps.map((r) => `${r.dep}/${r.handle}`),
    }
  }
  return out
}

/** The uuids a device gets when first seen: derived from the host and its identity. */
function expected(identity: string, bus: string) {
  const dev = deviceUuid(HOST, identity)
  const dep = deployableUuid(dev, `${HOST}_0000:${bus}:00.0`)
  const info = (fn: string) => canonicalJson({ domain: '0000', bus, device: '00', function: fn })
  return {
    uuid: dev,
    deps: [attachHandleUuid(dep, info('0')), attachHandleUuid(dep, info('1'))]
      .sort()
      .map((h) => `${dep}/${h}`),
  }
}

const pathOf = (bus: string) =>
  pathKey(canonicalJson({ domain: '0000', bus, device: '00', function: '0' }))

/** Binds an ARQ (v1 style, no profile) to the first handle of the device at `bus`. */
async function bindArq(db: Kysely<Database>, bus: string): Promise<number> {
  const h = await db
    .selectFrom('attach_handles as h')
    .innerJoin('deployables as p', 'p.id', 'h.deployable_id')
    .select(['h.id', 'h.deployable_id'])
    .where('p.name', '=', `${HOST}_0000:${bus}:00.0`)
    .orderBy('h.id')
    .executeTakeFirstOrThrow()
  await db
    .insertInto('accelerator_requests')
    .values({
      uuid: '0a0a0a0a-0000-4000-8000-000000000001',
      state: 'Bound',
      device_profile_id: null,
      device_profile_group_id: 0,
      project_id: 'p',
      hostname: HOST,
      device_rp_uuid: null,
      instance_uuid: null,
      attach_handle_id: h.id,
      deployable_id: h.deployable_id,
      created_at: T0,
      updated_at: null,
    })
    .execute()
  return h.id
}

const arqHandle = async (db: Kysely<Database>) =>
  (await db.selectFrom('accelerator_requests').select('attach_handle_id').executeTakeFirstOrThrow())
    .attach_handle_id

for (const dialect of await testDialects()) {
  await test(
    `identity: uninstall and reinstall a driver gives the same uuids and lifecycle back on ${dialect.name}`,
    { skip: dialect.skip },
    async () => {
      const { db, close } = await dialect.create()
      try {
        const devices = [card(0, 'GPU-SN-0'), card(1, undefined)]
        assert.equal((await sync(db, devices)).added, 2)
        const first = await state(db)
        assert.deepEqual(first['10'], {
          ...expected('serial:GPU-SN-0', '10'),
          lifecycle: 'inactive',
          status: 'enabled',
        })
        assert.deepEqual(first['11'], {
          ...expected(pathOf('11'), '11'),
          lifecycle: 'inactive',
          status: 'enabled',
        })
        // The operator activated one and put it in maintenance.
        await db
          .updateTable('devices')
          .set({ lifecycle: 'active', status: 'maintaining' })
          .where('uuid', '=', first['10']!.uuid)
          .execute()

        // Driver uninstalled: the devices vanish (nothing holds them), and their rows go.
        assert.equal((await sync(db, [], T1)).removed, 2)
        assert.deepEqual(await state(db), {})
        // Reinstalled: the same uuids, and the lifecycle and status they had.
        assert.equal((await sync(db, devices, T1)).added, 2)
        const back = await state(db)
        assert.deepEqual(back['10'], {
          ...first['10']!,
          lifecycle: 'active',
          status: 'maintaining',
        })
        assert.deepEqual(back['11'], first['11'])
        const events = await db
          .selectFrom('events')
          .select(['event_type', 'resource_uuid'])
          .where('resource_uuid', '=', first['10']!.uuid)
          .orderBy('id')
          .execute()
        assert.deepEqual(
          events.map((e) => e.event_type),
          ['accelerator.device.added', 'accelerator.device.removed', 'accelerator.device.added'],
        )

        // The agent lost its cache: the same report from scratch changes nothing.
        const { added, updated, removed, pending } = await sync(db, devices, T1)
        assert.deepEqual([added, updated, removed, pending], [0, 0, 0, 0])
        assert.deepEqual(await state(db), back)
      } finally {
        await close()
      }
    },
  )

  await test(
    `identity: a card moved to another slot keeps its uuid; a different serial is a new device on ${dialect.name}`,
    { skip: dialect.skip },
    async () => {
      const { db, close } = await dialect.create()
      try {
        await sync(db, [card(0, 'SN-A'), card(1, 'SN-B')])
        const first = await state(db)
        await db.updateTable('devices').set({ lifecycle: 'active' }).execute()

        // SN-A moves from bus 10 to bus 20: same device uuid, lifecycle kept, control path updated;
        // its deployable is named after the address, so it is a new one (new provider).
        const moved = await sync(db, [card(0, 'SN-A', '20'), card(1, 'SN-B')], T1)
        assert.deepEqual([moved.added, moved.removed], [0, 0])
        const after = await state(db)
        assert.equal(after['20']!.uuid, first['10']!.uuid)
        assert.equal(after['20']!.lifecycle, 'active')
        const dep = deployableUuid(first['10']!.uuid, `${HOST}_0000:20:00.0`)
        assert.ok(after['20']!.deps.every((d) => d.startsWith(`${dep}/`)))
        assert.deepEqual(after['11'], { ...first['11']!, lifecycle: 'active' })

        // Two cards swap slots: both keep their uuids.
        await sync(db, [card(0, 'SN-A', '11'), card(1, 'SN-B', '20')], T1)
        const swapped = await state(db)
        assert.equal(swapped['11']!.uuid, first['10']!.uuid)
        assert.equal(swapped['20']!.uuid, first['11']!.uuid)

        // Another card (SN-C) in SN-B's slot: a new device with its own uuid, SN-B's row goes.
        const other = await sync(db, [card(0, 'SN-A', '11'), card(1, 'SN-C', '20')], T1)
        assert.deepEqual([other.added, other.removed], [1, 1])
        const replaced = await state(db)
        assert.equal(replaced['20']!.uuid, deviceUuid(HOST, 'serial:SN-C'))
        assert.equal(replaced['20']!.lifecycle, 'inactive')
        // SN-B comes back there: its own uuid and lifecycle.
        await sync(db, [card(0, 'SN-A', '11'), card(1, 'SN-B', '20')], T1)
        const restored = await state(db)
        assert.equal(restored['20']!.uuid, first['11']!.uuid)
        assert.equal(restored['20']!.lifecycle, 'active')
      } finally {
        await close()
      }
    },
  )

  await test(
    `identity: a bound ARQ keeps its attach handle through report cycles on ${dialect.name}`,
    { skip: dialect.skip },
    async () => {
      const { db, close } = await dialect.create()
      try {
        await sync(db, [card(0, 'SN-A'), card(1, undefined)])
        const handle = await bindArq(db, '10')
        const first = await state(db)
        const handleUuid = async () =>
          (
            await db
              .selectFrom('attach_handles')
              .select('uuid')
              .where('id', '=', handle)
              .executeTakeFirstOrThrow()
          ).uuid
        const heldUuid = await handleUuid()

        // Unchanged report, then the agent lost its cache and reports from scratch: nothing moves.
        await sync(db, [card(0, 'SN-A'), card(1, undefined)], T1)
        assert.deepEqual(await state(db), first)
        assert.equal(await arqHandle(db), handle)

        // A different card at the held card's address: it waits for the held row to be freed.
        const swapped = await sync(db, [card(0, 'SN-X'), card(1, undefined)], T1)
        assert.equal(swapped.added, 0)
        assert.ok(swapped.pending >= 1)
        assert.equal((await state(db))['10']!.uuid, first['10']!.uuid)
        assert.equal(await arqHandle(db), handle)
        assert.equal(await handleUuid(), heldUuid)

        // The original is back: same device, same handle, no longer pending.
        const back = await sync(db, [card(0, 'SN-A'), card(1, undefined)], T1)
        assert.equal(back.pending, 0)
        assert.deepEqual(
          Object.fromEntries(Object.entries(await state(db)).map(([k, v]) => [k, v.uuid])),
          { '10': first['10']!.uuid, '11': first['11']!.uuid },
        )
        assert.equal(await arqHandle(db), handle)
        assert.equal(await handleUuid(), heldUuid)

        // Freed, then replaced for real: SN-X gets its own uuid; SN-A is remembered.
        await db.deleteFrom('accelerator_requests').execute()
        const replaced = await sync(db, [card(0, 'SN-X'), card(1, undefined)], T1)
        assert.deepEqual([replaced.added, replaced.removed, replaced.pending], [1, 1, 0])
        assert.equal((await state(db))['10']!.uuid, deviceUuid(HOST, 'serial:SN-X'))
        const known = await db
          .selectFrom('device_identities')
          .select(['identity_key', 'device_uuid'])
          .orderBy('identity_key')
          .execute()
        assert.deepEqual(known, [
          { identity_key: pathOf('11'), device_uuid: first['11']!.uuid },
          { identity_key: 'serial:SN-A', device_uuid: first['10']!.uuid },
          { identity_key: 'serial:SN-X', device_uuid: deviceUuid(HOST, 'serial:SN-X') },
        ])
      } finally {
        await close()
      }
    },
  )
}
