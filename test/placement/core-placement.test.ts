/**
 * A conductor and an agent (fake driver) in one core, against real Placement: the agent finds its
 * compute node provider (or says exactly what is missing), and the operator's `ready` makes the
 * device active and its accelerators offered (reserved 0).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import { testDialects, type TestDatabase } from '../support/db.js'
import { NotFoundError } from '../../src/domain/errors.js'
import { noopLogger } from '../../src/domain/logger.js'
import { startCore, type Core } from '../../src/main/core.js'
import { findRootProvider } from '../../src/openstack/root-provider.js'
import { placementSkip, startPlacement, type RunningPlacement } from '../support/peers/placement.js'

const skip = await placementSkip()

void describe('agent and conductor with real Placement', { skip }, () => {
  let placement: RunningPlacement
  let db: TestDatabase
  let core: Core | undefined

  before(async () => {
    placement = await startPlacement()
    db = await (await testDialects()).find((d) => d.name === 'sqlite')!.create()
  })
  after(async () => {
    await core?.stop()
    await db?.close()
    await placement?.stop()
  })

  void it('without a compute node provider the agent retries, then names what is missing', async () => {
    const waits: number[] = []
    await assert.rejects(
      findRootProvider({
        placement: placement.client,
        names: ['cn-missing.example.org', 'cn-missing'],
        create: false,
        log: noopLogger,
        sleep: async (ms) => void waits.push(ms),
      }),
      (err: unknown) => {
        assert.ok(err instanceof NotFoundError)
        assert.match(
          err.message,
          /no resource provider named "cn-missing\.example\.org" or "cn-missing"/,
        )
        assert.match(err.message, /create_root_provider = true/)
        return true
      },
    )
    assert.deepEqual(waits, [1000, 2000, 4000])
    // Found by the second name (the host) once Nova has registered it.
    await placement.client.createProvider({
      uuid: 'c0ffee00-0000-4000-8000-0000000000c1',
      name: 'cn-missing',
    })
    const found = await findRootProvider({
      placement: placement.client,
      names: ['x.example.org', 'cn-missing'],
      create: false,
      log: noopLogger,
    })
    assert.deepEqual(found, { name: 'cn-missing', uuid: 'c0ffee00-0000-4000-8000-0000000000c1' })
  })

  void it('reports under the compute node, and ready makes the device offered', async () => {
    core = await startCore({
      db,
      bus: createInProcessBus(),
      log: noopLogger,
      agent: { host: 'cn-1', enabledDrivers: ['fake'], periodicIntervalMs: 3_600_000 },
      placement: { client: placement.client, createRootProvider: true },
    })
    await core.agent!.discoverNow()
    const root = (await placement.client.findProviderByName('cn-1'))!
    const dep = await db.db
      .selectFrom('deployables')
      .select(['rp_uuid', 'name'])
      .executeTakeFirstOrThrow()
    const rp = (await placement.client.getProvider(dep.rp_uuid!))!
    assert.equal(rp.parentProviderUuid, root.uuid)
    assert.deepEqual(await placement.client.getInventories(rp.uuid), {
      FPGA: {
        total: 16,
        reserved: 16,
        min_unit: 1,
        max_unit: 16,
        step_size: 1,
        allocation_ratio: 1,
      },
    })
    assert.deepEqual((await placement.client.getTraits(rp.uuid)).sort(), [
      'CUSTOM_FAKE_DEVICE',
      'OWNER_CYBORG',
    ])

    const device = await db.db.selectFrom('devices').select('uuid').executeTakeFirstOrThrow()
    const ready = await core.conductorClient.markDeviceReady({ uuid: device.uuid })
    assert.equal(ready.lifecycle, 'active')
    assert.equal((await placement.client.getInventories(rp.uuid)).FPGA!.reserved, 0)
  })
})
