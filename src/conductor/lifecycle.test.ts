import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createConductor, type Conductor } from './conductor.js'
import { createLifecycle, failureReason } from './lifecycle.js'
import { createInProcessBus } from '../bus/in-process-bus.js'
import { testDialects, type TestDatabase } from '../../test/support/db.js'
import { getDevice, listDevicesByHost } from '../db/reads/device-reads.js'
import { updateDeviceLifecycle } from '../db/lifecycle.js'
import { createAgentClient } from '../rpc/agent-rpc.js'
import { inventoryHash } from '../rpc/inventory-hash.js'
import { ConflictError, NotFoundError, TimeoutError } from '../domain/errors.js'
import type { DiscoveredDevice } from '../domain/inventory/inventory.js'
import { noopLogger } from '../domain/logger.js'

// The conductor side alone; test/core/lifecycle.test.ts runs it against real agents.
const clock = { now: () => new Date('2026-11-22T06:00:00.000Z') }

const device = (host: string, bus: string): DiscoveredDevice => ({
  type: 'GPU',
  vendor: '10de',
  model: '1eb8',
  stdBoardInfo: null,
  vendorBoardInfo: null,
  controlPath: { type: 'PCI', info: { domain: '0000', bus, device: '00', function: '0' } },
  deployables: [
    {
      name: `${host}_0000:${bus}:00.0`,
      numAccelerators: 1,
      driverName: 'nvidia-gpu',
      attributes: [{ key: 'rc', value: 'PGPU' }],
      attachHandles: [{ type: 'PCI', info: { domain: '0000', bus, device: '00', function: '0' } }],
    },
  ],
})

void describe('device lifecycle, conductor side (sqlite; no agent on the host)', () => {
  const bus = createInProcessBus()
  let db: TestDatabase
  let conductor: Conductor
  const uuidOf = async (bus_: string) =>
    (await listDevicesByHost(db.db, 'ghost')).find((d) => d.controlPath.bus === bus_)!.uuid

  before(async () => {
    db = await (await testDialects()).find((d) => d.name === 'sqlite')!.create()
    const agentFor = (host: string) => createAgentClient(bus, host, { timeoutMs: 150 })
    conductor = createConductor(
      { db, log: noopLogger, clock, agentFor },
      { saveIntervalMs: 1, maxBatch: 8 },
    )
    const devices = ['3b', '5e', 'af', 'd8', 'e1'].map((b) => device('ghost', b))
    await conductor.reportInventory({
      host: 'ghost',
      hash: inventoryHash(devices),
      devices,
      autoActivate: false,
    })
  })
  after(async () => {
    await conductor.stop()
    await bus.close()
    await db.close()
  })

  void it('puts the device in error when its agent does not answer', async () => {
    const saved = await conductor.markDeviceReady({ uuid: await uuidOf('3b') })
    assert.equal(saved.lifecycle, 'error')
    assert.equal(
      saved.lifecycleReason,
      'agent on ghost did not answer: no reply to cyborg.agent.ghost.install within 150 ms',
    )
  })

  void it('refuses a device that is not inactive or error, naming its lifecycle; and unknown or malformed uuids', async () => {
    const uuid = await uuidOf('5e')
    await updateDeviceLifecycle(
      db.db,
      uuid,
      { from: ['inactive'], to: 'active', reason: null },
      '2026-01-01T00:00:00.000000+00:00',
    )
    await assert.rejects(conductor.markDeviceReady({ uuid }), (err) => {
      assert.ok(err instanceof ConflictError)
      assert.equal(err.code, 'DEVICE_LIFECYCLE_CONFLICT')
      assert.match(
        err.message,
        new RegExp(`^device ${uuid} is active; only an inactive or error device`),
      )
      assert.deepEqual(err.details, { uuid, lifecycle: 'active' })
      return true
    })
    assert.equal(
      (await getDevice(db.db, uuid)).updatedAt,
      '2026-01-01T00:00:00.000000+00:00',
      'nothing written',
    )
    await assert.rejects(conductor.markDeviceReady({ uuid: crypto.randomUUID() }), NotFoundError)
    await assert.rejects(conductor.markDeviceReady({ uuid: 'nope' }), { name: 'InvalidInputError' })
  })

  void it('takes over a device left installing by a conductor that died, but not a fresh install', async () => {
    const uuid = await uuidOf('e1')
    // Installing for 5 minutes: another conductor may still be waiting for the agent.
    await updateDeviceLifecycle(
      db.db,
      uuid,
      { from: ['inactive'], to: 'installing', reason: null },
      '2026-11-22T05:55:00.000000+00:00',
    )
    await assert.rejects(conductor.markDeviceReady({ uuid }), { code: 'DEVICE_LIFECYCLE_CONFLICT' })
    // Installing for an hour: nobody settles it any more; marking it ready installs again.
    await db.db
      .updateTable('devices')
      .set({ updated_at: '2026-11-22T05:00:00.000000+00:00' })
      .where('uuid', '=', uuid)
      .execute()
    const saved = await conductor.markDeviceReady({ uuid })
    assert.equal(saved.lifecycle, 'error')
    assert.match(saved.lifecycleReason ?? '', /agent on ghost did not answer/)
  })

  void it('lets only one of two concurrent calls claim the device, and reports the change once', async () => {
    const uuid = await uuidOf('af')
    const changed: string[] = []
    let installs = 0
    const lifecycle = createLifecycle({
      db,
      agentFor: (host) => {
        installs++
        return createAgentClient(bus, host, { timeoutMs: 50 })
      },
      log: noopLogger,
      clock,
      onInventoryChanged: async (host) => void changed.push(host),
    })
    const outcomes = await Promise.allSettled([
      lifecycle.markDeviceReady(uuid),
      lifecycle.markDeviceReady(uuid),
    ])
    const [won] = outcomes.filter((o) => o.status === 'fulfilled')
    const [lost] = outcomes.filter((o) => o.status === 'rejected')
    assert.equal(won?.value.lifecycle, 'error')
    assert.ok(lost?.reason instanceof ConflictError)
    assert.equal(installs, 1)
    assert.deepEqual(changed, ['ghost'])
  })

  void it('refuses markDeviceReady on a conductor that cannot reach agents, before any write', async () => {
    const lonely = createConductor(
      { db, log: noopLogger, clock },
      { saveIntervalMs: 1, maxBatch: 8 },
    )
    const uuid = await uuidOf('d8')
    await assert.rejects(lonely.markDeviceReady({ uuid }), {
      name: 'UnavailableError',
      code: 'NO_AGENT_RPC',
    })
    assert.equal((await getDevice(db.db, uuid)).lifecycle, 'inactive')
    await lonely.stop()
  })

  void it('explains an agent that never answered, or is too old for install', () => {
    const old = new NotFoundError('no RPC method cyborg.agent.h9.install', {
      code: 'RPC_NO_METHOD',
    })
    assert.equal(
      failureReason('h9', old),
      'agent on h9 cannot install devices (it predates agent RPC 1.2): no RPC method cyborg.agent.h9.install',
    )
    assert.equal(failureReason('h9', new TimeoutError('late')), 'agent on h9 did not answer: late')
    assert.equal(failureReason('h9', new Error('tool exited 2')), 'tool exited 2')
  })
})
