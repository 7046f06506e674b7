/**
 * Standalone with Placement and without Nova: binding an accelerator request writes its allocation
 * to a real Placement (consumer = the instance), unbinding and deleting take it back.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import { testDialects, type TestDatabase } from '../../src/db/testing.js'
import { noopLogger } from '../../src/domain/logger.js'
import { startCore, type Core } from '../../src/main/core.js'
import { placementSkip, startPlacement, type RunningPlacement } from '../support/placement.js'

const skip = await placementSkip()
const VM = '7a11c0c0-0000-4000-8000-000000000001'

void describe('ARQ allocations in real Placement (standalone, no Nova)', { skip }, () => {
  let placement: RunningPlacement
  let db: TestDatabase
  let core: Core

  before(async () => {
    placement = await startPlacement()
    db = await (await testDialects()).find((d) => d.name === 'sqlite')!.create()
    core = await startCore({
      db,
      bus: createInProcessBus(),
      log: noopLogger,
      agent: { host: 'alloc-1', enabledDrivers: ['fake'], autoActivate: true, periodicIntervalMs: 3_600_000 },
      placement: { client: placement.client, createRootProvider: true },
    })
    await core.agent!.discoverNow()
    await core.conductorClient.createDeviceProfile({ name: 'fpga2', description: null, groups: [{ 'resources:FPGA': '2' }] })
  })
  after(async () => {
    await core?.stop()
    await db?.close()
    await placement?.stop()
  })

  void it('allocates on bind, gives back on unbind and delete', async () => {
    const rp = (await db.db.selectFrom('deployables').select('rp_uuid').executeTakeFirstOrThrow()).rp_uuid!
    const c = core.conductorClient
    const [a, b] = await c.createArqs({ deviceProfileName: 'fpga2', projectId: 'p1', maxArqs: 64 })
    const outcomes = await c.bindArqs({
      bindings: { [a!.uuid]: { hostname: 'alloc-1', instanceUuid: VM }, [b!.uuid]: { hostname: 'alloc-1', instanceUuid: VM } },
    })
    assert.deepEqual(outcomes.map((o) => o.state), ['Bound', 'Bound'])
    const allocs = await placement.client.getAllocations(VM)
    assert.deepEqual(allocs.allocations, { [rp]: { FPGA: 2 } })
    assert.equal(allocs.projectId, 'p1')

    await c.unbindArqs({ uuids: [a!.uuid] })
    assert.deepEqual((await placement.client.getAllocations(VM)).allocations, { [rp]: { FPGA: 1 } })
    await c.deleteArqs({ instanceUuid: VM })
    assert.deepEqual((await placement.client.getAllocations(VM)).allocations, {})
  })
})
