import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createAgent, type AgentDeps } from './agent.js'
import { buildSnapshot } from './snapshot.js'
import { createFakeDriver } from '../drivers/fake.js'
import { createFixtureHostProbe } from '../drivers/fixture-host-probe.js'
import type { AcceleratorDriver } from '../drivers/driver.js'
import { createInProcessBus } from '../bus/in-process-bus.js'
import { createAgentClient } from '../rpc/agent-rpc.js'
import type { ConductorRpc } from '../rpc/conductor-rpc.js'
import { inventoryHash } from '../rpc/inventory-hash.js'
import { DriverError, UnavailableError } from '../domain/errors.js'
import { noopLogger } from '../domain/logger.js'
import { systemClock } from '../domain/time.js'
import type { DiscoveredDevice, InventorySnapshot } from '../domain/inventory.js'

const fake = createFakeDriver({ host: createFixtureHostProbe('/nonexistent'), hostname: 'h1' })

/** A conductor that records calls; `fail` makes them throw. */
function stubConductor(options: { fail?: boolean } = {}) {
  const reports: (InventorySnapshot & { autoActivate: boolean })[] = []
  const heartbeats: unknown[] = []
  const conductor = {
    async reportInventory(req: InventorySnapshot & { autoActivate: boolean }) {
      if (options.fail) throw new UnavailableError('conductor down')
      reports.push(req)
      return { changed: reports.length === 1, added: reports.length === 1 ? 1 : 0, updated: 0, removed: 0 }
    },
    async heartbeat(req: unknown) {
      if (options.fail) throw new UnavailableError('conductor down')
      heartbeats.push(req)
    },
  } as unknown as ConductorRpc
  return { conductor, reports, heartbeats }
}

const deps = (conductor: ConductorRpc, drivers: AcceleratorDriver[] = [fake]): AgentDeps => ({
  conductor,
  drivers,
  log: noopLogger,
  clock: systemClock,
})

function failingDriver(name: string): AcceleratorDriver {
  return { name, deviceType: 'GPU', discover: async () => Promise.reject(new Error('nvidia-smi exploded')) }
}

void describe('agent', () => {
  void it('reports every driver’s devices with a hash that ignores their order', async () => {
    const stub = stubConductor()
    const agent = createAgent(deps(stub.conductor), { host: 'h1', autoActivate: true })
    assert.deepEqual(await agent.discoverNow(), { changed: true, added: 1, updated: 0, removed: 0 })
    const [report] = stub.reports
    assert.ok(report)
    assert.equal(report.host, 'h1')
    assert.equal(report.autoActivate, true)
    assert.equal(report.hash, inventoryHash(report.devices))
    const devices = await fake.discover()
    const shuffled: DiscoveredDevice[] = devices.map((d) => ({
      ...d,
      deployables: d.deployables.map((dep) => ({ ...dep, attachHandles: [...dep.attachHandles].reverse(), attributes: [...dep.attributes].reverse() })),
    }))
    assert.equal(buildSnapshot('h1', shuffled).hash, report.hash)
  })

  void it('does not report when a driver fails, and says which', async () => {
    const stub = stubConductor()
    const agent = createAgent(deps(stub.conductor, [fake, failingDriver('broken')]), { host: 'h1' })
    await assert.rejects(agent.discoverNow(), (err) => {
      assert.ok(err instanceof DriverError)
      assert.equal(err.code, 'DISCOVERY_FAILED')
      assert.deepEqual(err.details?.failures, [{ driver: 'broken', code: 'DRIVER_ERROR', message: 'driver broken failed: nvidia-smi exploded' }])
      return true
    })
    assert.equal(stub.reports.length, 0)
  })

  void it('fails a driver that hangs, after its time limit', async () => {
    const stub = stubConductor()
    const hanging: AcceleratorDriver = { name: 'slow', deviceType: 'GPU', discover: () => new Promise(() => {}) }
    const agent = createAgent(deps(stub.conductor, [hanging]), { host: 'h1', discoverTimeoutMs: 30 })
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
      const agent = createAgent({ ...deps(stub.conductor), bus }, { host: 'h1', periodicIntervalMs: 20, version: '9.9' })
      await agent.start()
      const client = createAgentClient(bus, 'h1', { timeoutMs: 1000 })
      assert.equal((await client.discover({})).changed, false)
      await new Promise((r) => setTimeout(r, 70))
      await agent.stop()
      assert.equal(agent.state, 'stopped')
      assert.ok(stub.reports.length >= 3, `${stub.reports.length} reports`)
      assert.ok(stub.heartbeats.length >= 2, `${stub.heartbeats.length} heartbeats`)
      assert.deepEqual(stub.heartbeats[0], { host: 'h1', binary: 'cyborg-agent', version: '9.9' })
      const count = stub.reports.length
      await new Promise((r) => setTimeout(r, 50))
      assert.equal(stub.reports.length, count, 'no run after stop')
      await assert.rejects(agent.discoverNow(), { code: 'AGENT_STOPPED' })
      await assert.rejects(createAgentClient(bus, 'h1', { timeoutMs: 50 }).discover({}), { name: 'TimeoutError' })
    } finally {
      await bus.close()
    }
  })

  void it('survives a conductor that keeps failing', async () => {
    const stub = stubConductor({ fail: true })
    const warnings: string[] = []
    const log = { ...noopLogger, warn: (_o: unknown, msg?: unknown) => void warnings.push(String(msg)), child: () => log }
    const agent = createAgent({ ...deps(stub.conductor), log }, { host: 'h1', periodicIntervalMs: 15 })
    await agent.start()
    await new Promise((r) => setTimeout(r, 60))
    assert.equal(agent.state, 'running')
    await agent.stop()
    assert.ok(warnings.filter((w) => w.startsWith('inventory report failed')).length >= 2)
    assert.ok(warnings.some((w) => w.startsWith('heartbeat failed')))
  })
})
