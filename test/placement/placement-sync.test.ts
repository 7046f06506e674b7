/**
 * The conductor keeps a real Placement (Debian's placement-api 8.0.0, noauth2) in step with the
 * inventory: provider tree, inventories with reserved, traits, deletion only when free, generation
 * conflicts retried, and no call at all for an unchanged report.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createConductor, type Conductor } from '../../src/conductor/conductor.js'
import { testDialects, type TestDatabase } from '../support/db.js'
import { sampleDevice } from '../support/sample-inventory.js'
import { inventoryHash } from '../../src/rpc/inventory-hash.js'
import { deployableRpUuid } from '../../src/domain/ids.js'
import type { DiscoveredDevice } from '../../src/domain/inventory/inventory.js'
import { noopLogger } from '../../src/domain/logger.js'
import type { PlacementClient } from '../../src/openstack/placement.js'
import {
  allocate,
  countingClient,
  deallocate,
  placementSkip,
  startPlacement,
  type RunningPlacement,
} from '../support/peers/placement.js'

const skip = await placementSkip()
const clock = { now: () => new Date('2026-01-01T00:00:00.000Z') }
const report = (host: string, devices: DiscoveredDevice[], root?: string) => ({
  host,
  hash: inventoryHash(devices),
  devices,
  autoActivate: false,
  ...(root ? { resourceProvider: { name: root } } : {}),
})
const devicesOf = (host: string, n: number) =>
  Array.from({ length: n }, (_, i) => sampleDevice(host, i))
const rpOf = (host: string, n: number) =>
  deployableRpUuid(host, sampleDevice(host, n).deployables[0]!.name)

void describe('placement sync against real Placement', { skip }, () => {
  let placement: RunningPlacement
  let db: TestDatabase
  let conductor: Conductor
  let counted: { client: PlacementClient; calls: string[] }
  const reader = () => placement.client

  before(async () => {
    placement = await startPlacement()
    db = await (await testDialects()).find((d) => d.name === 'sqlite')!.create()
    counted = countingClient(placement.url)
    conductor = createConductor(
      {
        db,
        log: noopLogger,
        clock,
        placement: { client: counted.client, createRootProvider: true },
      },
      { saveIntervalMs: 1 },
    )
  })
  after(async () => {
    await conductor?.stop()
    await db?.close()
    await placement?.stop()
  })

  const setActive = async (host: string) => {
    await db.db
      .updateTable('devices')
      .set({ lifecycle: 'active' })
      .where('hostname', '=', host)
      .execute()
  }

  void it('creates the tree for a new host with 8 deployables, and an unchanged report costs no call', async () => {
    const devices = devicesOf('pl-a', 8)
    // Warm the custom trait cache on another host first, as a running conductor would be; and
    // let "Nova" register the compute node, as it does before any agent reports.
    await conductor.reportInventory(report('pl-warm', devicesOf('pl-warm', 2)))
    await reader().createProvider({ uuid: 'c0ffee00-0000-4000-8000-00000000000a', name: 'pl-a' })
    counted.calls.length = 0

    const result = await conductor.reportInventory(report('pl-a', devices))
    assert.equal(result.added, 8)
    const calls = [...counted.calls]
    assert.ok(
      calls.every((c) => / 20[014]$/.test(c)),
      calls.join('\n'),
    )
    // 1 root lookup + 8 creates + 8 trait sets + 1 reshaper: no provider is read before it is written.
    assert.equal(calls.length, 18, calls.join('\n'))

    const root = (await reader().findProviderByName('pl-a'))!
    const tree = await reader().listTree(root.uuid)
    assert.equal(tree.length, 9)
    for (let n = 0; n < 8; n++) {
      const uuid = rpOf('pl-a', n)
      const rp = tree.find((p) => p.uuid === uuid)!
      assert.equal(rp.parentProviderUuid, root.uuid)
      assert.equal(rp.name, devices[n]!.deployables[0]!.name)
      const rc = n % 2 === 0 ? 'PGPU' : 'FPGA'
      // New devices are inactive: everything reserved.
      assert.deepEqual(await reader().getInventories(uuid), {
        [rc]: {
          total: 2,
          reserved: 2,
          min_unit: 1,
          max_unit: 2,
          step_size: 1,
          allocation_ratio: 1,
        },
      })
      const trait = n % 2 === 0 ? 'CUSTOM_GPU_NVIDIA' : 'CUSTOM_FPGA_INTEL'
      assert.deepEqual((await reader().getTraits(uuid)).sort(), [trait, 'OWNER_CYBORG'].sort())
    }
    const warmRoot = (await reader().findProviderByName('pl-warm'))!
    assert.deepEqual(await reader().getTraits(warmRoot.uuid), ['COMPUTE_ACCELERATORS'])

    counted.calls.length = 0
    const again = await conductor.reportInventory(report('pl-a', devices))
    assert.equal(again.changed, false)
    assert.deepEqual(counted.calls, [])
  })

  void it('offers active devices, and disable/enable moves reserved', async () => {
    const devices = devicesOf('pl-b', 1)
    await conductor.reportInventory(report('pl-b', devices))
    await setActive('pl-b')
    const [device] = await db.db
      .selectFrom('devices')
      .select('uuid')
      .where('hostname', '=', 'pl-b')
      .execute()
    // A status change syncs the host: the device is active and enabled, so nothing is reserved.
    await conductor.setDeviceStatus({ uuid: device!.uuid, status: 'enabled' })
    const rp = rpOf('pl-b', 0)
    assert.equal((await reader().getInventories(rp)).PGPU!.reserved, 0)
    await conductor.setDeviceStatus({ uuid: device!.uuid, status: 'maintaining' })
    assert.equal((await reader().getInventories(rp)).PGPU!.reserved, 2)
    await conductor.setDeviceStatus({ uuid: device!.uuid, status: 'enabled' })
    assert.equal((await reader().getInventories(rp)).PGPU!.reserved, 0)
  })

  void it('retries a write that lost a generation race', async () => {
    const devices = devicesOf('pl-c', 1)
    await conductor.reportInventory(report('pl-c', devices))
    await setActive('pl-c')
    const rp = rpOf('pl-c', 0)
    // Someone else bumps the generation (e.g. Nova allocating): the conductor's cached one is stale.
    // (Two trait writes that end where they began: only the generation moves.)
    const p = (await reader().getProvider(rp))!
    const traits = await reader().getTraits(rp)
    const g = await reader().setTraits(rp, p.generation, ['OWNER_CYBORG'])
    await reader().setTraits(rp, g, traits)
    const [device] = await db.db
      .selectFrom('devices')
      .select('uuid')
      .where('hostname', '=', 'pl-c')
      .execute()
    counted.calls.length = 0
    await conductor.setDeviceStatus({ uuid: device!.uuid, status: 'enabled' })
    assert.ok(
      counted.calls.some((c) => c.endsWith(' 409')),
      counted.calls.join('\n'),
    )
    assert.equal((await reader().getInventories(rp)).PGPU!.reserved, 0)
    assert.deepEqual((await reader().getTraits(rp)).sort(), ['CUSTOM_GPU_NVIDIA', 'OWNER_CYBORG'])
  })

  void it('changes of one host at once share its sync: no write races another (issue 28)', async () => {
    await conductor.reportInventory(report('pl-f', devicesOf('pl-f', 8)))
    await setActive('pl-f')
    const devices = await db.db
      .selectFrom('devices')
      .select('uuid')
      .where('hostname', '=', 'pl-f')
      .execute()
    counted.calls.length = 0
    await Promise.all(
      devices.map((d) => conductor.setDeviceStatus({ uuid: d.uuid, status: 'enabled' })),
    )
    assert.ok(!counted.calls.some((c) => c.endsWith(' 409')), counted.calls.join('\n'))
    for (let n = 0; n < 8; n++) {
      const rc = n % 2 === 0 ? 'PGPU' : 'FPGA'
      assert.equal((await reader().getInventories(rpOf('pl-f', n)))[rc]!.reserved, 0)
    }
  })

  void it('keeps a vanished device while Placement holds allocations, and removes it once freed', async () => {
    const devices = devicesOf('pl-d', 2)
    await conductor.reportInventory(report('pl-d', devices))
    await setActive('pl-d')
    const [device] = await db.db
      .selectFrom('devices')
      .select('uuid')
      .where('hostname', '=', 'pl-d')
      .execute()
    await conductor.setDeviceStatus({ uuid: device!.uuid, status: 'enabled' })
    const held = rpOf('pl-d', 0)
    await allocate(placement.url, held, 'PGPU', 1, 'a3c3f1d2-0000-4000-8000-000000000001')

    // Both devices vanish: the free one goes at once, the allocated one stays pending removal.
    const gone = await conductor.reportInventory(report('pl-d', []))
    assert.equal(gone.removed, 1)
    assert.equal(gone.pending, 1)
    assert.equal(await reader().getProvider(rpOf('pl-d', 1)), null)
    const kept = (await reader().getProvider(held))!
    assert.equal(kept.name, devices[0]!.deployables[0]!.name)
    // Pending removal: nothing more may be allocated from it.
    assert.equal((await reader().getInventories(held)).PGPU!.reserved, 2)
    const rows = await db.db
      .selectFrom('deployables as p')
      .innerJoin('devices as d', 'd.id', 'p.device_id')
      .select(['p.removal_pending'])
      .where('d.hostname', '=', 'pl-d')
      .execute()
    assert.deepEqual(
      rows.map((r) => Number(r.removal_pending)),
      [1],
    )

    // The same report again (the hash was not kept): still held, still pending.
    assert.equal((await conductor.reportInventory(report('pl-d', []))).pending, 1)

    await deallocate(placement.url, 'a3c3f1d2-0000-4000-8000-000000000001')
    const freed = await conductor.reportInventory(report('pl-d', []))
    assert.equal(freed.pending, 0)
    assert.equal(freed.removed, 1)
    assert.equal(await reader().getProvider(held), null)
    const left = await db.db
      .selectFrom('devices')
      .select('id')
      .where('hostname', '=', 'pl-d')
      .execute()
    assert.deepEqual(left, [])
    // Now the hash is kept: an identical report is free.
    counted.calls.length = 0
    assert.equal((await conductor.reportInventory(report('pl-d', []))).changed, false)
    assert.deepEqual(counted.calls, [])
  })

  void it('without a compute node provider, the report lands and Placement catches up once it exists', async () => {
    const strict = createConductor(
      {
        db,
        log: noopLogger,
        clock,
        placement: { client: counted.client, createRootProvider: false },
      },
      { saveIntervalMs: 1 },
    )
    try {
      const devices = devicesOf('pl-e', 1)
      const first = await strict.reportInventory(report('pl-e', devices, 'compute-e'))
      assert.equal(first.added, 1)
      assert.equal(await reader().getProvider(rpOf('pl-e', 0)), null)
      // Nova's compute service registers the node; the agent's next (identical) report syncs.
      await reader().createProvider({
        uuid: 'c0ffee00-0000-4000-8000-00000000000e',
        name: 'compute-e',
      })
      const second = await strict.reportInventory(report('pl-e', devices, 'compute-e'))
      assert.equal(second.changed, true)
      const rp = (await reader().getProvider(rpOf('pl-e', 0)))!
      assert.equal(rp.parentProviderUuid, 'c0ffee00-0000-4000-8000-00000000000e')
      assert.equal(
        (await strict.reportInventory(report('pl-e', devices, 'compute-e'))).changed,
        false,
      )
    } finally {
      await strict.stop()
    }
  })
})
