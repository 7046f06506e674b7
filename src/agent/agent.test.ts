import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createAgent, type AgentDeps } from './agent.js'
import { buildSnapshot } from './snapshot.js'
import { createFakeDriver } from '../drivers/fake/fake.js'
import { DRIVER_REGISTRY } from '../drivers/index.js'
import { createFixtureHostProbe } from '../drivers/host-probe/fixture-host-probe.js'
import type { AcceleratorDriver } from '../drivers/driver.js'
import { createInProcessBus } from '../bus/in-process-bus.js'
import { createAgentClient } from '../rpc/agent-rpc.js'
import type { ConductorRpc } from '../rpc/conductor-rpc.js'
import { inventoryHash } from '../rpc/inventory-hash.js'
import { DriverError, UnavailableError } from '../domain/errors.js'
import { noopLogger } from '../domain/logger.js'
import { systemClock } from '../domain/time.js'
import type { DiscoveredDevice, InventorySnapshot } from '../domain/inventory/inventory.js'
import { createFileAgentCache } from './local-cache.js'
import { TELEMETRY_TOPIC, type AgentTelemetry } from '../rpc/agent-rpc.js'
import type { DriverStats } from './telemetry.js'

const fake = createFakeDriver({ host: createFixtureHostProbe('/nonexistent'), hostname: 'h1' })

/** A conductor that records calls; `fail` makes them throw. */
function stubConductor(options: { fail?: boolean; events?: string[] } = {}) {
  const reports: (InventorySnapshot & { autoActivate: boolean })[] = []
  const heartbeats: unknown[] = []
  const confirms: { host: string; hash: string }[] = []
  const conductor = {
    async reportInventory(req: InventorySnapshot & { autoActivate: boolean }) {
      if (options.fail) throw new UnavailableError('conductor down')
      options.events?.push(`report ${req.hash.slice(0, 8)}`)
      reports.push(req)
      return {
        changed: reports.length === 1,
        added: reports.length === 1 ? 1 : 0,
        updated: 0,
        removed: 0,
        pending: 0,
      }
    },
    async heartbeat(req: { host: string; inventoryHash?: string }) {
      if (options.fail) throw new UnavailableError('conductor down')
      heartbeats.push(req)
      if (req.inventoryHash === undefined) return undefined
      confirms.push({ host: req.host, hash: req.inventoryHash })
      return { inventoryCurrent: req.inventoryHash === reports.at(-1)?.hash }
    },
  } as unknown as ConductorRpc
  return { conductor, reports, heartbeats, confirms }
}

const deps = (conductor: ConductorRpc, drivers: AcceleratorDriver[] = [fake]): AgentDeps => ({
  conductor,
  drivers,
  driverRegistry: DRIVER_REGISTRY,
  log: noopLogger,
  clock: systemClock,
})

function failingDriver(name: string): AcceleratorDriver {
  return {
    name,
    deviceType: 'GPU',
    discover: async () => Promise.reject(new Error('nvidia-smi exploded')),
  }
}

void describe('agent', () => {
  void it('reports every driver’s devices with a hash that ignores their order', async () => {
    const stub = stubConductor()
    const agent = createAgent(deps(stub.conductor), { host: 'h1', autoActivate: true })
    assert.deepEqual(await agent.discoverNow(), {
      changed: true,
      added: 1,
      updated: 0,
      removed: 0,
      pending: 0,
    })
    const [report] = stub.reports
    assert.ok(report)
    assert.equal(report.host, 'h1')
    assert.equal(report.autoActivate, true)
    assert.equal(report.hash, inventoryHash(report.devices))
    const devices = await fake.discover()
    const shuffled: DiscoveredDevice[] = devices.map((d) => ({
      ...d,
      deployables: d.deployables.map((dep) => ({
        ...dep,
        attachHandles: [...dep.attachHandles].reverse(),
        attributes: [...dep.attributes].reverse(),
      })),
    }))
    assert.equal(buildSnapshot('h1', shuffled).hash, report.hash)
  })

  void it('confirms an unchanged inventory by its hash instead of resending it, unless the conductor lost it', async () => {
    const stub = stubConductor()
    const agent = createAgent(deps(stub.conductor), { host: 'h1' })
    await agent.discoverNow()
    assert.equal((await agent.discoverNow()).changed, false)
    assert.equal(stub.reports.length, 1)
    assert.deepEqual(stub.confirms, [{ host: 'h1', hash: stub.reports[0]!.hash }])
    // The conductor no longer holds that hash (cleared for a retry, or a new database): full report.
    stub.reports.push({ ...stub.reports[0]!, hash: 'something else' })
    await agent.discoverNow()
    assert.equal(stub.confirms.length, 2)
    assert.equal(stub.reports.length, 3)
    assert.equal(stub.reports[2]!.hash, stub.reports[0]!.hash)
  })

  void it('does not report when a driver fails, and says which', async () => {
    const stub = stubConductor()
    const agent = createAgent(deps(stub.conductor, [fake, failingDriver('broken')]), { host: 'h1' })
    await assert.rejects(agent.discoverNow(), (err) => {
      assert.ok(err instanceof DriverError)
      assert.equal(err.code, 'DISCOVERY_FAILED')
      assert.deepEqual(err.details?.failures, [
        {
          driver: 'broken',
          code: 'DRIVER_ERROR',
          message: 'driver broken failed: nvidia-smi exploded',
        },
      ])
      return true
    })
    assert.equal(stub.reports.length, 0)
  })

  void it('fails a driver that hangs, after its time limit', async () => {
    const stub = stubConductor()
    const hanging: AcceleratorDriver = {
      name: 'slow',
      deviceType: 'GPU',
      discover: () => new Promise(() => {}),
    }
    const agent = createAgent(deps(stub.conductor, [hanging]), {
      host: 'h1',
      discoverTimeoutMs: 30,
    })
    await assert.rejects(agent.discoverNow(), { code: 'DISCOVERY_FAILED' })
  })

  void it('never runs two discoveries at once', async () => {
    let running = 0
    let most = 0
    const slow: AcceleratorDriver = {
      name: 'slow',
      deviceType: 'FPGA',
      async discover() {
        most = Math.max(most, ++running)
        await new Promise((r) => setTimeout(r, 10))
        running--
        return fake.discover()
      },
    }
    const agent = createAgent(deps(stubConductor().conductor, [slow]), { host: 'h1' })
    await Promise.all([agent.discoverNow(), agent.discoverNow(), agent.discoverNow()])
    assert.equal(most, 1)
  })

  void it('discovers and heartbeats every period until stopped, serving discover on the bus', async () => {
    const stub = stubConductor()
    const bus = createInProcessBus()
    try {
      const agent = createAgent(
        { ...deps(stub.conductor), bus },
        { host: 'h1', periodicIntervalMs: 20, version: '9.9' },
      )
      await agent.start()
      const client = createAgentClient(bus, 'h1', { timeoutMs: 1000 })
      assert.equal((await client.discover({})).changed, false)
      await new Promise((r) => setTimeout(r, 70))
      await agent.stop()
      assert.equal(agent.state, 'stopped')
      // One full report, then unchanged runs that only confirm its hash.
      assert.equal(stub.reports.length, 1)
      assert.ok(stub.confirms.length >= 2, `${stub.confirms.length} confirmations`)
      assert.ok(stub.heartbeats.length >= 2, `${stub.heartbeats.length} heartbeats`)
      assert.deepEqual(stub.heartbeats[0], { host: 'h1', binary: 'cyborg-agent', version: '9.9' })
      const count = stub.confirms.length
      await new Promise((r) => setTimeout(r, 50))
      assert.equal(stub.confirms.length, count, 'no run after stop')
      await assert.rejects(agent.discoverNow(), { code: 'AGENT_STOPPED' })
      await assert.rejects(createAgentClient(bus, 'h1', { timeoutMs: 50 }).discover({}), {
        name: 'TimeoutError',
      })
    } finally {
      await bus.close()
    }
  })

  void it('survives a conductor that keeps failing', async () => {
    const stub = stubConductor({ fail: true })
    const warnings: string[] = []
    const log = {
      ...noopLogger,
      warn: (_o: unknown, msg?: unknown) => void warnings.push(String(msg)),
      child: () => log,
    }
    const agent = createAgent(
      { ...deps(stub.conductor), log },
      { host: 'h1', periodicIntervalMs: 15 },
    )
    await agent.start()
    await new Promise((r) => setTimeout(r, 60))
    assert.equal(agent.state, 'running')
    await agent.stop()
    assert.ok(warnings.filter((w) => w.startsWith('inventory report failed')).length >= 2)
    assert.ok(warnings.some((w) => w.startsWith('heartbeat failed')))
  })

  void it('stops within its grace period while a report waits on a conductor that never answers', async () => {
    const hung = {
      ...stubConductor().conductor,
      reportInventory: () => new Promise<never>(() => {}),
    } as unknown as ConductorRpc
    const agent = createAgent(deps(hung), {
      host: 'h1',
      periodicIntervalMs: 3_600_000,
      stopGraceMs: 50,
    })
    await agent.start()
    await new Promise((r) => setTimeout(r, 20))
    const started = Date.now()
    await agent.stop()
    assert.equal(agent.state, 'stopped')
    assert.ok(Date.now() - started < 1000, `stop took ${Date.now() - started} ms`)
  })

  void it('keeps an unsent report in the outbox and replays it after a restart, before discovering', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'cyborg-agent-'))
    try {
      // First life: the conductor is down; the report stays in the outbox.
      const down = stubConductor({ fail: true })
      const first = createAgent(
        { ...deps(down.conductor), cache: createFileAgentCache(dir, { log: noopLogger }) },
        { host: 'h1' },
      )
      await assert.rejects(first.discoverNow(), { code: 'UNAVAILABLE' })
      const sent = await createFileAgentCache(dir, { log: noopLogger }).pending()
      assert.equal(sent.length, 1)
      const lostHash = sent[0]!.hash

      // Second life on the same directory, the conductor is up, and the host has changed meanwhile.
      const events: string[] = []
      const up = stubConductor({ events })
      const changed = createFakeDriver({
        host: createFixtureHostProbe('/nonexistent'),
        hostname: 'h1-renamed',
      })
      const observed: AcceleratorDriver = {
        name: 'fake',
        deviceType: 'FPGA',
        discover: async (o) => {
          events.push('discover')
          return changed.discover(o)
        },
      }
      const cache = createFileAgentCache(dir, { log: noopLogger })
      const second = createAgent(
        { ...deps(up.conductor, [observed]), cache },
        { host: 'h1', periodicIntervalMs: 60_000 },
      )
      await second.start()
      await second.discoverNow()
      await second.stop()
      assert.equal(up.reports[0]?.hash, lostHash, 'the lost report is sent first')
      assert.equal(events[0], `report ${lostHash.slice(0, 8)}`)
      assert.equal(events[1], 'discover')
      assert.deepEqual(await cache.pending(), [])
      assert.deepEqual(
        await createFileAgentCache(dir, { log: noopLogger }).pending(),
        [],
        'the outbox is empty on disk too',
      )
      assert.equal((await cache.driverStates())[0]?.ok, true)

      // A third life (with no drivers, so that any report of lostHash would be a replay) replays nothing.
      const third = stubConductor()
      const again = createAgent(
        { ...deps(third.conductor, []), cache: createFileAgentCache(dir, { log: noopLogger }) },
        { host: 'h1' },
      )
      await again.start()
      await again.discoverNow()
      await again.stop()
      assert.ok(third.reports.length >= 1)
      assert.ok(third.reports.every((r) => r.hash !== lostHash))
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  void it('publishes telemetry every period, with the stats of drivers that offer them', async () => {
    const bus = createInProcessBus()
    try {
      const received: AgentTelemetry[] = []
      const sub = await bus.subscribe(
        TELEMETRY_TOPIC,
        (m) => void received.push(m as AgentTelemetry),
      )
      const withStats: AcceleratorDriver & DriverStats = {
        name: 'busy',
        deviceType: 'GPU',
        discover: async () => [],
        stats: async () => ({ utilizationPercent: 42, nested: { no: 1 } as never, model: 'x' }),
      }
      const brokenStats = { ...fake, name: 'flaky', stats: () => Promise.reject(new Error('no')) }
      const agent = createAgent(
        { ...deps(stubConductor().conductor, [fake, withStats, brokenStats]), bus },
        { host: 'h1', periodicIntervalMs: 20 },
      )
      await agent.start()
      await new Promise((r) => setTimeout(r, 60))
      await agent.stop()
      await sub.unsubscribe()
      assert.ok(received.length >= 2, `${received.length} messages`)
      const [message] = received
      assert.equal(message!.version, 2)
      assert.equal(message!.host, 'h1')
      assert.ok(!Number.isNaN(Date.parse(message!.time)))
      assert.equal(message!.deviceCount, 2)
      assert.deepEqual(
        message!.drivers.map((d) => [d.name, d.ok, d.deviceCount, d.stats]),
        [
          ['fake', true, 1, undefined],
          ['busy', true, 0, { utilizationPercent: 42, model: 'x' }],
          ['flaky', true, 1, undefined],
        ],
      )
      assert.ok(
        message!.drivers.every((d) => typeof d.durationMs === 'number' && d.durationMs >= 0),
      )
    } finally {
      await bus.close()
    }
  })

  void it('serves the device operations on its topic, writing through its host probe', async () => {
    const bus = createInProcessBus()
    try {
      const probe = createFixtureHostProbe('/nonexistent')
      const agent = createAgent(
        { ...deps(stubConductor().conductor), bus, hostProbe: probe },
        { host: 'h1' },
      )
      await agent.start()
      const client = createAgentClient(bus, 'h1', { timeoutMs: 1000 })
      await assert.rejects(client.prepare({ address: '0000:3b:00.1' }), {
        name: 'NotFoundError',
        code: 'PCI_DEVICE_NOT_FOUND',
      })
      await assert.rejects(
        client.createMdev({ parent: '0000:3b:00.1', type: '../../x', uuid: 'x' }),
        {
          name: 'InvalidInputError',
          code: 'MDEV_TYPE_INVALID',
        },
      )
      assert.deepEqual(await client.removeMdev({ uuid: '5a1f6f3c-3a0e-4c53-9d2a-0a4a5e3f9b11' }), {
        uuid: '5a1f6f3c-3a0e-4c53-9d2a-0a4a5e3f9b11',
        changed: false,
      })
      await agent.stop()
      assert.deepEqual(probe.writes, [])
    } finally {
      await bus.close()
    }
  })
})
