/** The seed 000 device lifecycle end to end: a conductor on SQLite and real agents on the in-process bus. */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createConductor, type Conductor } from '../../src/conductor/conductor.js'
import { createLifecycle } from '../../src/conductor/lifecycle.js'
import { createAgent, type Agent } from '../../src/agent/agent.js'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import { testDialects, type TestDatabase } from '../support/db.js'
import { listDevicesByHost } from '../../src/db/reads/device-reads.js'
import { createFakeDriver } from '../../src/drivers/fake/fake.js'
import { DRIVER_REGISTRY } from '../../src/drivers/index.js'
import { createFixtureHostProbe } from '../../src/drivers/host-probe/fixture-host-probe.js'
import type { AcceleratorDriver } from '../../src/drivers/driver.js'
import { createAgentClient } from '../../src/rpc/agent-rpc.js'
import {
  createConductorClient,
  serveConductor,
  type ConductorRpc,
} from '../../src/rpc/conductor-rpc.js'
import { ConflictError, NotFoundError } from '../../src/domain/errors.js'
import type { DiscoveredDevice } from '../../src/domain/inventory/inventory.js'
import { noopLogger } from '../../src/domain/logger.js'

const clock = { now: () => new Date('2026-11-22T06:00:00.000Z') }
const GPU = { domain: '0000', bus: 'af', device: '00', function: '0' }

function gpuDevice(host: string): DiscoveredDevice {
  return {
    type: 'GPU',
    vendor: '10de',
    model: '1eb8',
    stdBoardInfo: null,
    vendorBoardInfo: null,
    controlPath: { type: 'PCI', info: { ...GPU } },
    deployables: [
      {
        name: `${host}_0000:af:00.0`,
        numAccelerators: 1,
        driverName: 'gpu-kit',
        attributes: [{ key: 'rc', value: 'PGPU' }],
        attachHandles: [{ type: 'PCI', info: { ...GPU } }],
      },
    ],
  }
}

/** A driver whose install step fails while `state.broken` is set. */
function gpuKit(state: { broken: boolean; installs: number }, host = 'h1'): AcceleratorDriver {
  return {
    name: 'gpu-kit',
    deviceType: 'GPU',
    discover: async () => [gpuDevice(host)],
    async install() {
      state.installs++
      if (state.broken) throw new Error('vendor firmware tool exited 2')
    },
  }
}

void describe('device lifecycle (sqlite, a real agent on the in-process bus)', () => {
  const bus = createInProcessBus()
  const kit = { broken: false, installs: 0 }
  let db: TestDatabase
  let conductor: Conductor
  let client: ConductorRpc
  let agent: Agent
  const uuidOf = async (host: string, bus_: string) =>
    (await listDevicesByHost(db.db, host)).find((d) => d.controlPath.bus === bus_)!.uuid

  before(async () => {
    db = await (await testDialects()).find((d) => d.name === 'sqlite')!.create()
    const agentFor = (host: string) => createAgentClient(bus, host, { timeoutMs: 200 })
    conductor = createConductor(
      { db, log: noopLogger, clock, agentFor },
      { saveIntervalMs: 1, maxBatch: 8 },
    )
    await serveConductor(bus, conductor)
    client = createConductorClient(bus, { timeoutMs: 5000 })
    const fake = createFakeDriver({ host: createFixtureHostProbe('/nonexistent'), hostname: 'h1' })
    agent = createAgent(
      {
        conductor: client,
        drivers: [fake, gpuKit(kit)],
        driverRegistry: DRIVER_REGISTRY,
        log: noopLogger,
        clock,
        bus,
      },
      { host: 'h1', periodicIntervalMs: 3_600_000 },
    )
    await agent.start()
    await agent.discoverNow()
  })
  after(async () => {
    await agent.stop()
    await conductor.stop()
    await bus.close()
    await db.close()
  })

  void it('takes an inactive device through installing to active, over the conductor RPC', async () => {
    const uuid = await uuidOf('h1', '0c')
    const device = await client.markDeviceReady({ uuid })
    assert.equal(device.lifecycle, 'active')
    assert.equal(device.lifecycleReason, null)
    assert.equal(device.updatedAt, '2026-11-22T06:00:00.000000+00:00')
  })

  void it('records a failed install as error with the agent’s reason, and lets the operator retry', async () => {
    const uuid = await uuidOf('h1', 'af')
    kit.broken = true
    const failed = await conductor.markDeviceReady({ uuid })
    assert.equal(failed.lifecycle, 'error')
    assert.equal(
      failed.lifecycleReason,
      'driver gpu-kit could not install device 0000:af:00.0: vendor firmware tool exited 2',
    )
    kit.broken = false
    const retried = await conductor.markDeviceReady({ uuid })
    assert.equal(retried.lifecycle, 'active')
    assert.equal(retried.lifecycleReason, null)
    assert.equal(kit.installs, 2)
  })

  void it('refuses to mark an active device ready again, naming its lifecycle', async () => {
    const uuid = await uuidOf('h1', '0c')
    await assert.rejects(client.markDeviceReady({ uuid }), (err) => {
      assert.ok(err instanceof ConflictError)
      assert.equal(err.code, 'DEVICE_LIFECYCLE_CONFLICT')
      assert.match(err.message, /is active; only an inactive or error device .*can be marked ready/)
      return true
    })
    await assert.rejects(client.markDeviceReady({ uuid: crypto.randomUUID() }), NotFoundError)
    await assert.rejects(client.markDeviceReady({ uuid: 'nope' }), { name: 'InvalidInputError' })
  })

  void it('lets only one of two concurrent calls start the install', async () => {
    const h2 = { broken: false, installs: 0 }
    const second = createAgent(
      {
        conductor: client,
        drivers: [gpuKit(h2, 'h2')],
        driverRegistry: DRIVER_REGISTRY,
        log: noopLogger,
        clock,
        bus,
      },
      { host: 'h2', periodicIntervalMs: 3_600_000 },
    )
    await second.start()
    await second.discoverNow()
    const uuid = await uuidOf('h2', 'af')
    const changed: string[] = []
    const lifecycle = createLifecycle({
      db,
      agentFor: (host) => createAgentClient(bus, host, { timeoutMs: 2000 }),
      log: noopLogger,
      clock,
      onInventoryChanged: async (host) => void changed.push(host),
    })
    const outcomes = await Promise.allSettled([
      lifecycle.markDeviceReady(uuid),
      lifecycle.markDeviceReady(uuid),
    ])
    await second.stop()
    assert.deepEqual(outcomes.map((o) => o.status).sort(), ['fulfilled', 'rejected'])
    const rejected = outcomes.find((o) => o.status === 'rejected')!
    assert.ok(rejected.reason instanceof ConflictError)
    assert.deepEqual(changed, ['h2'])
    assert.equal(h2.installs, 1)
  })
})
