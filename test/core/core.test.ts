/**
 * The in-process stack (conductor + agent with the fake driver over InProcessBus) on a fresh
 * database of every dialect that can run here.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { testDialects, type TestDatabase } from '../support/db.js'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import type { MessageBus } from '../../src/bus/bus.js'
import { startCore, type Core } from '../../src/main/core.js'
import { createAgent } from '../../src/agent/agent.js'
import { createFakeDriver } from '../../src/drivers/fake/fake.js'
import { DRIVER_REGISTRY } from '../../src/drivers/index.js'
import { createFixtureHostProbe } from '../../src/drivers/host-probe/fixture-host-probe.js'
import { ConflictError } from '../../src/domain/errors.js'
import { noopLogger } from '../../src/domain/logger.js'
import { systemClock } from '../../src/domain/time.js'
import { dumpTables, eventually } from './helpers.js'

const noHost = createFixtureHostProbe('/nonexistent')

for (const dialect of await testDialects()) {
  void describe(`core on ${dialect.name}`, { skip: dialect.skip }, () => {
    let handle: TestDatabase
    let bus: MessageBus
    let core: Core

    before(async () => {
      handle = await dialect.create()
      bus = createInProcessBus()
      core = await startCore({
        db: handle,
        bus,
        log: noopLogger,
        conductor: { saveIntervalMs: 20, maxBatch: 64 },
        agent: false,
        rpcTimeoutMs: 10_000,
      })
    })
    after(async () => {
      await core?.stop()
      await bus?.close()
      await handle?.close()
    })

    void it('stores an agent report as inactive devices; an identical report writes only the heartbeat', async () => {
      const host = 'compute-1.example'
      const agent = createAgent(
        {
          conductor: core.conductorClient,
          drivers: [createFakeDriver({ host: noHost, hostname: host })],
          driverRegistry: DRIVER_REGISTRY,
          log: noopLogger,
          clock: systemClock,
        },
        { host },
      )
      assert.deepEqual(await agent.discoverNow(), {
        changed: true,
        added: 1,
        updated: 0,
        removed: 0,
        pending: 0,
      })

      const { db } = handle
      const devices = await db
        .selectFrom('devices')
        .selectAll()
        .where('hostname', '=', host)
        .execute()
      assert.equal(devices.length, 1)
      const device = devices[0]!
      assert.equal(device.lifecycle, 'inactive')
      assert.equal(device.type, 'FPGA')
      assert.equal(device.vendor, '0xABCD')
      assert.equal(device.model, 'miss model info')
      assert.deepEqual(JSON.parse(device.cpid_info), {
        domain: '0000',
        bus: '0c',
        device: '00',
        function: '0',
      })
      const deployables = await db
        .selectFrom('deployables')
        .selectAll()
        .where('device_id', '=', device.id)
        .execute()
      assert.deepEqual(
        deployables.map((d) => [d.name, d.num_accelerators, d.driver_name]),
        [['compute_1_example_FakeDevice', 16, 'fake']],
      )
      const attributes = await db
        .selectFrom('attributes')
        .select(['key', 'value'])
        .where('deployable_id', '=', deployables[0]!.id)
        .orderBy('key')
        .execute()
      assert.deepEqual(attributes, [
        { key: 'rc', value: 'FPGA' },
        { key: 'trait0', value: 'CUSTOM_FAKE_DEVICE' },
      ])
      const handles = await db
        .selectFrom('attach_handles')
        .selectAll()
        .where('deployable_id', '=', deployables[0]!.id)
        .execute()
      assert.equal(handles.length, 16)
      assert.ok(handles.every((h) => h.attach_type === 'TEST_PCI' && Number(h.in_use) === 0))

      const before = await dumpTables(handle)
      const stats = core.conductor!.stats()
      assert.deepEqual(await agent.discoverNow(), {
        changed: false,
        added: 0,
        updated: 0,
        removed: 0,
        pending: 0,
      })
      // The unchanged inventory is confirmed by the agent's heartbeat (one op: its conditional
      // UPDATE of last_seen); no snapshot is sent and nothing else is written.
      const after = core.conductor!.stats()
      assert.equal(after.ops - stats.ops, 1, 'one heartbeat, no report write')
      const now = await dumpTables(handle)
      const { services: servicesBefore, ...inventoryBefore } = before
      const { services: servicesNow, ...inventoryNow } = now
      assert.deepEqual(inventoryNow, inventoryBefore)
      const strip = (rows: typeof servicesNow) =>
        rows.map(({ last_seen: _l, updated_at: _u, version: _v, ...rest }) => rest)
      assert.deepEqual(strip(servicesNow), strip(servicesBefore))
    })

    void it('starts an agent that reports on start; autoActivate makes devices active', async () => {
      const host = 'compute-2'
      const agentCore = await startCore({
        bus,
        log: noopLogger,
        conductor: false,
        agent: {
          host,
          periodicIntervalMs: 3_600_000,
          autoActivate: true,
          enabledDrivers: ['fake'],
          hostProbe: noHost,
        },
      })
      try {
        const device = await eventually(() =>
          handle.db
            .selectFrom('devices')
            .selectAll()
            .where('hostname', '=', host)
            .executeTakeFirst(),
        )
        assert.equal(device.lifecycle, 'active')
        assert.equal((await agentCore.agent!.discoverNow()).changed, false)
        const service = await eventually(() =>
          handle.db
            .selectFrom('services')
            .selectAll()
            .where('host', '=', host)
            .where('version', '=', '0.1.0')
            .executeTakeFirst(),
        )
        assert.equal(service.binary, 'cyborg-agent')
        assert.ok(service.report_hash)
      } finally {
        await agentCore.stop()
      }
    })

    void it('batches 30 concurrent profile creations; a duplicate name gets ConflictError across the bus', async () => {
      const names = [
        ...Array.from({ length: 29 }, (_, i) => `dp-${dialect.name}-${i}`),
        `dp-${dialect.name}-0`,
      ]
      const groups = [{ 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required' }]
      const stats = core.conductor!.stats()
      const results = await Promise.allSettled(
        names.map((name) =>
          core.conductorClient.createDeviceProfile({ name, description: `for ${name}`, groups }),
        ),
      )
      const after = core.conductor!.stats()
      assert.equal(after.ops - stats.ops, 30)
      assert.ok(
        after.batches - stats.batches < 30,
        `30 calls shared ${after.batches - stats.batches} transactions`,
      )
      assert.ok(
        after.batches - stats.batches <= 15,
        `30 calls took ${after.batches - stats.batches} transactions`,
      )

      const rejected = results.filter((r) => r.status === 'rejected')
      assert.equal(rejected.length, 1)
      const err = (rejected[0] as PromiseRejectedResult).reason as ConflictError
      assert.ok(err instanceof ConflictError, `got ${String(err)}`)
      assert.equal(err.code, 'DEVICE_PROFILE_EXISTS')
      assert.equal(err.details?.field, 'name')
      const loser = results.indexOf(rejected[0]!)
      assert.ok(loser === 0 || loser === 29)

      const uuids = new Set<string>()
      results.forEach((r, i) => {
        if (r.status !== 'fulfilled') return
        assert.equal(r.value.name, names[i])
        assert.equal(r.value.description, `for ${names[i]}`)
        assert.deepEqual(r.value.groups, groups)
        uuids.add(r.value.uuid)
      })
      assert.equal(uuids.size, 29)
      const stored = await handle.db
        .selectFrom('device_profiles')
        .select('name')
        .where('name', 'like', `dp-${dialect.name}-%`)
        .execute()
      assert.equal(stored.length, 29)
    })
  })
}
