/**
 * Standalone with Placement and without Nova: binding an accelerator request writes its allocation
 * to a real Placement (consumer = the instance), unbinding and deleting take it back.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createConductor } from '../../src/conductor/conductor.js'
import type { TestDatabase } from '../support/db.js'
import { startFakeHostCore } from '../support/fake-host-core.js'
import { noopLogger } from '../../src/domain/logger.js'
import type { Core } from '../../src/main/core.js'
import { V1_CONSUMER_PROJECT } from '../../src/conductor/v1-placement.js'
import { placementSkip, startPlacement, type RunningPlacement } from '../support/peers/placement.js'

const skip = await placementSkip()
const VM = '7a11c0c0-0000-4000-8000-000000000001'
const VM2 = '7a11c0c0-0000-4000-8000-000000000002'
const VM3 = '7a11c0c0-0000-4000-8000-000000000003'
const LONG_AGO = '2026-01-01T00:00:00.000000+00:00'

void describe('ARQ allocations in real Placement (standalone, no Nova)', { skip }, () => {
  let placement: RunningPlacement
  let db: TestDatabase
  let core: Core

  before(async () => {
    placement = await startPlacement()
    ;({ db, core } = await startFakeHostCore({
      host: 'alloc-1',
      placement: { client: placement.client, createRootProvider: true },
    }))
    await core.conductorClient.createDeviceProfile({
      name: 'fpga2',
      description: null,
      groups: [{ 'resources:FPGA': '2' }],
    })
  })
  after(async () => {
    await core?.stop()
    await db?.close()
    await placement?.stop()
  })

  void it('allocates on bind, gives back on unbind and delete', async () => {
    const rp = (await db.db.selectFrom('deployables').select('rp_uuid').executeTakeFirstOrThrow())
      .rp_uuid!
    const c = core.conductorClient
    const [a, b] = await c.createArqs({ deviceProfileName: 'fpga2', projectId: 'p1', maxArqs: 64 })
    const outcomes = await c.bindArqs({
      bindings: {
        [a!.uuid]: { hostname: 'alloc-1', instanceUuid: VM },
        [b!.uuid]: { hostname: 'alloc-1', instanceUuid: VM },
      },
    })
    assert.deepEqual(
      outcomes.map((o) => o.state),
      ['Bound', 'Bound'],
    )
    const allocs = await placement.client.getAllocations(VM)
    assert.deepEqual(allocs.allocations, { [rp]: { FPGA: 2 } })
    assert.equal(allocs.projectId, 'p1')

    await c.unbindArqs({ uuids: [a!.uuid] })
    assert.deepEqual((await placement.client.getAllocations(VM)).allocations, { [rp]: { FPGA: 1 } })
    await c.deleteArqs({ instanceUuid: VM })
    assert.deepEqual((await placement.client.getAllocations(VM)).allocations, {})
    await core.conductor!.cleaningIdle()
  })

  void it('a released unit is reserved in Placement while its agent cleans it, then offered again', async () => {
    const rp = (await db.db.selectFrom('deployables').select('rp_uuid').executeTakeFirstOrThrow())
      .rp_uuid!
    const c = core.conductorClient
    const reserved = async () => (await placement.client.getInventories(rp)).FPGA!.reserved
    await c.updateDriver({
      driver: 'fake',
      hostname: 'alloc-1',
      options: { clean_delay_ms: '1500' },
    })
    try {
      const [a] = await c.createArqs({ deviceProfileName: 'fpga2', projectId: 'p1', maxArqs: 64 })
      await c.bindArqs({ bindings: { [a!.uuid]: { hostname: 'alloc-1', instanceUuid: VM } } })
      assert.equal(await reserved(), 0)
      await c.unbindArqs({ uuids: [a!.uuid] })
      // The conductor syncs the host before it asks the agent: poll for that write.
      const deadline = Date.now() + 1000
      while ((await reserved()) !== 1 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20))
      assert.equal(await reserved(), 1, 'reserved while cleaning')
      await core.conductor!.cleaningIdle()
      assert.equal(await reserved(), 0, 'offered again once clean')
      await c.deleteArqs({ instanceUuid: VM })
    } finally {
      await c.updateDriver({
        driver: 'fake',
        hostname: 'alloc-1',
        options: { clean_delay_ms: '0' },
      })
    }
  })
  void it('a v1 attachment is its own consumer of one unit; detach takes it back; a full provider refuses the attach', async () => {
    const { rp_uuid: rp, uuid: acc } = await db.db
      .selectFrom('deployables')
      .select(['rp_uuid', 'uuid'])
      .executeTakeFirstOrThrow()
    const c = core.conductorClient
    const attached = await c.attachAccelerator({ uuid: acc, target: { instanceUuid: VM3 } })
    const allocs = await placement.client.getAllocations(attached.attachment)
    assert.deepEqual(allocs.allocations, { [rp!]: { FPGA: 1 } })
    assert.equal(allocs.projectId, V1_CONSUMER_PROJECT)
    assert.deepEqual(
      (await placement.client.getAllocations(VM3)).allocations,
      {},
      "the instance's own allocations are untouched",
    )
    await c.detachAccelerator({ uuid: acc })
    assert.deepEqual((await placement.client.getAllocations(attached.attachment)).allocations, {})
    // The released unit is reserved in Placement while it is cleaned, then offered again.
    await core.conductor!.cleaningIdle()
    // Someone else (Nova's scheduler) holds every unit: Placement refuses, and nothing is left held.
    const other = '7a11c0c0-0000-4000-8000-0000000000ff'
    await placement.client.setAllocations(other, {
      allocations: { [rp!]: { FPGA: 16 } },
      generation: null,
      projectId: 'p9',
      userId: 'u9',
    })
    await assert.rejects(
      c.attachAccelerator({ uuid: acc, target: { instanceUuid: VM3 } }),
      (err: { code?: string; message: string }) => {
        assert.equal(err.code, 'ATTACH_FAILED')
        assert.match(err.message, /Placement refused the allocation/)
        return true
      },
    )
    assert.equal(
      (await db.db.selectFrom('attach_handles').select('id').where('in_use', '=', 1).execute())
        .length,
      0,
    )
    assert.equal(
      (
        await db.db
          .selectFrom('accelerator_requests')
          .select('id')
          .where('device_profile_id', 'is', null)
          .execute()
      ).length,
      0,
    )
    const held = await placement.client.getAllocations(other)
    await placement.client.setAllocations(other, { ...held, allocations: {} })
  })
  void it('the reaper takes back what a crash left allocated, and only that', async () => {
    const rp = (await db.db.selectFrom('deployables').select('rp_uuid').executeTakeFirstOrThrow())
      .rp_uuid!
    const c = core.conductorClient
    const [a, b] = await c.createArqs({ deviceProfileName: 'fpga2', projectId: 'p1', maxArqs: 64 })
    const [d] = await c.createArqs({ deviceProfileName: 'fpga2', projectId: 'p1', maxArqs: 64 })
    await c.bindArqs({
      bindings: {
        [a!.uuid]: { hostname: 'alloc-1', instanceUuid: VM2 },
        [b!.uuid]: { hostname: 'alloc-1', instanceUuid: VM2 },
      },
    })
    await c.bindArqs({ bindings: { [d!.uuid]: { hostname: 'alloc-1', instanceUuid: VM } } })
    assert.deepEqual((await placement.client.getAllocations(VM2)).allocations, {
      [rp]: { FPGA: 2 },
    })
    // What a conductor killed after its Placement write leaves: b still BindStarted (allocated, not
    // yet Bound), d Deleting (rows not yet gone, allocation not yet taken back). a stays Bound.
    const crash = (uuid: string, state: 'BindStarted' | 'Deleting') =>
      db.db
        .updateTable('accelerator_requests')
        .set({ state, updated_at: LONG_AGO })
        .where('uuid', '=', uuid)
        .execute()
    await crash(b!.uuid, 'BindStarted')
    await crash(d!.uuid, 'Deleting')
    const reaper = createConductor(
      {
        db,
        log: noopLogger,
        clock: { now: () => new Date() },
        placement: { client: placement.client, createRootProvider: false },
      },
      { bindTimeoutMs: 1_000, reapIntervalMs: 25 },
    )
    try {
      const deadline = Date.now() + 20_000
      while (
        (
          await db.db
            .selectFrom('accelerator_requests')
            .select('uuid')
            .where('state', 'in', ['BindStarted', 'Deleting'])
            .execute()
        ).length > 0
      ) {
        assert.ok(Date.now() < deadline, 'the reaper never ran')
        await new Promise((r) => setTimeout(r, 25))
      }
      await new Promise((r) => setTimeout(r, 200)) // the same pass then trims Placement
      assert.deepEqual(
        (await placement.client.getAllocations(VM2)).allocations,
        { [rp]: { FPGA: 1 } },
        'a keeps its unit',
      )
      assert.deepEqual((await placement.client.getAllocations(VM)).allocations, {})
    } finally {
      await reaper.stop()
    }
    await c.deleteArqs({ instanceUuid: VM2 })
    assert.deepEqual((await placement.client.getAllocations(VM2)).allocations, {})
  })
})
