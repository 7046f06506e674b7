/**
 * Driver administration and on-demand discovery through the conductor (ConductorRpc 1.4) with real
 * agents on the in-process bus: node1 runs the fake and pci drivers through startCore, node3 runs a
 * driver whose devices the test changes, and node2 is known from a report but has no agent (it must
 * come out `unreachable`, never failing the call). On every database that answers.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import type { MessageBus } from '../../src/bus/bus.js'
import { testDialects, type TestDatabase } from '../support/db.js'
import { sampleDevice } from '../support/sample-inventory.js'
import { ConflictError, InvalidInputError, NotFoundError } from '../../src/domain/errors.js'
import { noopLogger } from '../../src/domain/logger.js'
import { systemClock } from '../../src/domain/time.js'
import type { DiscoveredDevice } from '../../src/domain/inventory/inventory.js'
import type { AcceleratorDriver } from '../../src/drivers/driver.js'
import { DRIVER_REGISTRY } from '../../src/drivers/index.js'
import { createAgent, type Agent } from '../../src/agent/agent.js'
import { startCore, type Core } from '../../src/main/core.js'
import { inventoryHash } from '../../src/rpc/inventory-hash.js'
import { eventually } from './helpers.js'

const INSTANCE = '0b9c0d1e-0000-4000-8000-00000000d1a0'

for (const dialect of await testDialects()) {
  void describe(
    `driver administration through the conductor (${dialect.name})`,
    { skip: dialect.skip },
    () => {
      let db: TestDatabase
      let bus: MessageBus
      let core: Core
      let node3: Agent
      /** What node3's driver finds; the test edits it between discoveries. */
      let node3Devices: DiscoveredDevice[] = [sampleDevice('node3', 0), sampleDevice('node3', 1)]
      const node3Driver: AcceleratorDriver = {
        name: 'mutable',
        deviceType: 'GPU',
        discover: async () => structuredClone(node3Devices),
      }

      before(async () => {
        db = await dialect.create()
        bus = createInProcessBus()
        core = await startCore({
          db,
          bus,
          log: noopLogger,
          conductor: {
            saveIntervalMs: 1,
            driverAdmin: { listTimeoutMs: 300, actionTimeoutMs: 1500 },
          },
          agent: {
            host: 'node1',
            enabledDrivers: ['fake', 'pci'],
            driverOptions: { pci: { device_spec: '' } },
            autoActivate: true,
            periodicIntervalMs: 3_600_000,
          },
        })
        await core.agent!.discoverNow()
        const devices = [sampleDevice('node2', 0)]
        await core.conductorClient.reportInventory({
          host: 'node2',
          hash: inventoryHash(devices),
          devices,
          autoActivate: true,
        })
        node3 = createAgent(
          {
            conductor: core.conductorClient,
            drivers: [node3Driver],
            driverRegistry: DRIVER_REGISTRY,
            log: noopLogger,
            clock: systemClock,
            bus,
          },
          { host: 'node3', periodicIntervalMs: 3_600_000, version: '9.9.9' },
        )
        await node3.start()
        await eventually(
          async () =>
            (
              await db.db
                .selectFrom('devices')
                .select('id')
                .where('hostname', '=', 'node3')
                .execute()
            ).length === 2,
        )
      })
      after(async () => {
        await node3?.stop()
        await core?.stop()
        await bus?.close()
        await db?.close()
      })

      const c = () => core.conductorClient
      const driversOf = async (host: string) =>
        (await c().listAgentDrivers({ hostname: host })).hosts[0]!.drivers

      void it('lists every agent’s drivers; an agent that does not answer is unreachable, an unknown host is named', async () => {
        const { hosts } = await c().listAgentDrivers({})
        assert.deepEqual(
          hosts.map((h) => [h.hostname, h.status]),
          [
            ['node1', 'ok'],
            ['node2', 'unreachable'],
            ['node3', 'ok'],
          ],
        )
        const [fake, pci] = hosts[0]!.drivers
        assert.deepEqual(
          [fake!.name, fake!.aliases, fake!.enabled, fake!.deviceCount, fake!.lastDiscovery?.ok],
          ['fake', ['fake_driver'], true, 1, true],
        )
        assert.deepEqual([pci!.name, pci!.enabled, pci!.deviceCount], ['pci', true, 0])
        assert.equal(hosts[1]!.error?.code, 'AGENT_UNREACHABLE')
        assert.deepEqual(
          hosts[2]!.drivers.map((d) => [d.name, d.version, d.deviceCount]),
          [['mutable', '9.9.9', 2]],
        )
        await assert.rejects(c().listAgentDrivers({ hostname: 'nowhere' }), (err) => {
          assert.ok(err instanceof NotFoundError)
          assert.match(
            err.message,
            /host nowhere is not a known agent; known agents: node1, node2, node3/,
          )
          assert.equal(err.details?.field, 'hostname')
          return true
        })
      })

      void it('refuses to uninstall a driver whose device is bound (by name or alias), naming it; frees it after the unbind', async () => {
        await c().createDeviceProfile({
          name: 'fake1',
          description: null,
          groups: [{ 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required' }],
        })
        const [arq] = await c().createArqs({
          deviceProfileName: 'fake1',
          projectId: null,
          maxArqs: 8,
        })
        const [bound] = await c().bindArqs({
          bindings: { [arq!.uuid]: { hostname: 'node1', instanceUuid: INSTANCE } },
        })
        assert.equal(bound!.state, 'Bound')
        for (const driver of ['fake', 'fake_driver']) {
          await assert.rejects(c().uninstallDriver({ driver, hostname: 'node1' }), (err) => {
            assert.ok(err instanceof ConflictError, String(err))
            assert.equal(err.code, 'DRIVER_DEVICES_ALLOCATED')
            assert.match(
              err.message,
              new RegExp(
                `node1_FakeDevice on node1 \\(held by accelerator request ${arq!.uuid} Bound for instance ${INSTANCE}\\); detach or unbind them first`,
              ),
            )
            return true
          })
        }
        // Without a host too: the check covers every agent before anything changes.
        await assert.rejects(c().uninstallDriver({ driver: 'fake' }), ConflictError)
        assert.equal((await driversOf('node1'))[0]!.enabled, true, 'nothing was changed')

        await c().deleteArqs({ uuids: [arq!.uuid] })
        // The released unit is in use until its clean has run (docs/cleaning.md).
        await core.conductor!.cleaningIdle()
        const done = await c().uninstallDriver({ driver: 'fake', hostname: 'node1' })
        assert.deepEqual(
          done.hosts.map((h) => [h.hostname, h.status, h.state?.enabled]),
          [['node1', 'ok', false]],
        )
        assert.equal(
          (
            await db.db
              .selectFrom('deployables')
              .select('id')
              .where('name', '=', 'node1_FakeDevice')
              .execute()
          ).length,
          0,
          'its device left the inventory',
        )
        const [fake] = await driversOf('node1')
        assert.deepEqual([fake!.enabled, fake!.deviceCount, fake!.lastDiscovery], [false, 0, null])

        // Install on every agent: node1 enables it, node3 has no such driver, node2 does not answer.
        const installed = await c().installDriver({ driver: 'fake' })
        assert.deepEqual(
          installed.hosts.map((h) => [h.hostname, h.status]),
          [
            ['node1', 'ok'],
            ['node2', 'unreachable'],
            ['node3', 'skipped'],
          ],
        )
        assert.equal((await driversOf('node1'))[0]!.deviceCount, 1)
        assert.equal(
          (
            await db.db
              .selectFrom('deployables')
              .select('id')
              .where('name', '=', 'node1_FakeDevice')
              .execute()
          ).length,
          1,
        )
      })

      void it('names an unknown driver and refuses bad options, on one host or on all', async () => {
        await assert.rejects(
          c().installDriver({ driver: 'nope', hostname: 'node1' }),
          (err) =>
            err instanceof NotFoundError && /driver nope is not configured/.test(err.message),
        )
        await assert.rejects(
          c().installDriver({ driver: 'nope' }),
          (err) => err instanceof NotFoundError && err.details?.field === 'driver',
        )
        const bad = { device_spec: '{"vendor_id": "zz"}' }
        await assert.rejects(
          c().updateDriver({ driver: 'pci', hostname: 'node1', options: bad }),
          InvalidInputError,
        )
        await assert.rejects(c().updateDriver({ driver: 'pci', options: bad }), InvalidInputError)
        await assert.rejects(
          c().updateDriver({ driver: 'pci', options: {} }),
          (err) => err instanceof InvalidInputError && err.details?.field === 'options',
        )
      })

      void it('updates a driver’s options and rediscovers', async () => {
        const updated = await c().updateDriver({
          driver: 'pci',
          hostname: 'node1',
          options: { device_spec: '[{"vendor_id": "abcd", "product_id": "0001"}]' },
        })
        const [host] = updated.hosts
        assert.equal(host!.status, 'ok')
        assert.deepEqual(host!.state?.overrides, {
          device_spec: '[{"vendor_id": "abcd", "product_id": "0001"}]',
        })
        assert.equal(host!.state?.report.ok, true)
      })

      void it('discovers on demand and answers what was added, changed and removed', async () => {
        const unchanged = await c().discoverHosts({ hostname: 'node3' })
        assert.deepEqual(
          unchanged.hosts.map((h) => [h.hostname, h.status, h.added, h.changed, h.removed]),
          [['node3', 'ok', [], [], []]],
        )

        const changed = sampleDevice('node3', 1, { handles: 3 })
        node3Devices = [changed, sampleDevice('node3', 2)]
        const { hosts } = await c().discoverHosts({})
        assert.deepEqual(
          hosts.map((h) => [h.hostname, h.status]),
          [
            ['node1', 'ok'],
            ['node2', 'unreachable'],
            ['node3', 'ok'],
          ],
        )
        const node3 = hosts[2]!
        assert.deepEqual(node3.added, [
          { name: 'node3_0000:12:00.0', deviceType: 'GPU', address: '0000:12:00.0' },
        ])
        assert.deepEqual(node3.changed, [
          {
            name: 'node3_0000:11:00.0',
            deviceType: 'FPGA',
            address: '0000:11:00.0',
            fields: ['num_accelerators', 'attach_handles'],
          },
        ])
        assert.deepEqual(node3.removed, [
          { name: 'node3_0000:10:00.0', deviceType: 'GPU', address: '0000:10:00.0' },
        ])
        assert.deepEqual(node3.report, {
          changed: true,
          added: 1,
          updated: 1,
          removed: 1,
          pending: 0,
        })
        assert.deepEqual([hosts[0]!.added, hosts[0]!.removed], [[], []])
        assert.equal(hosts[1]!.error?.code, 'AGENT_UNREACHABLE')
      })

      void it('reports a failing discovery as that host’s failure', async () => {
        const saved = node3Driver.discover
        node3Driver.discover = async () => {
          throw new Error('sysfs went away')
        }
        try {
          const [host] = (await c().discoverHosts({ hostname: 'node3' })).hosts
          assert.equal(host!.status, 'failed')
          assert.equal(host!.error?.code, 'DISCOVERY_FAILED')
          assert.match(host!.error!.message, /discovery failed for mutable/)
          const [mutable] = await driversOf('node3')
          assert.equal(mutable!.lastDiscovery?.ok, false)
        } finally {
          node3Driver.discover = saved
        }
      })
    },
  )
}
