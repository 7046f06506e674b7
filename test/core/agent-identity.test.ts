/**
 * Stable identity across the agent's own life (issue 18 part 1, docs/identity.md), end to end over
 * the in-process bus and SQLite: a real agent with its file cache reports a fake device with a
 * serial; its state directory is removed while it is stopped (so it reports from scratch), then
 * restored from a copy; its driver is uninstalled (the device is deleted) and installed again.
 * Through all of it the device, deployable and attach handle keep their uuids, and the device
 * comes back `active` (the lifecycle it had), not `inactive` as a new device would.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { testDialects, type TestDatabase } from '../support/db.js'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import { startCore } from '../../src/main/core.js'
import { createFixtureHostProbe } from '../../src/drivers/host-probe/fixture-host-probe.js'
import { noopLogger } from '../../src/domain/logger.js'
import type { MessageBus } from '../../src/bus/bus.js'
import { eventually } from './helpers.js'

const HOST = 'identity-host'

/** The host's uuids: device, deployable and handles, with the device's lifecycle. */
async function uuidsOf(handle: TestDatabase) {
  const rows = await handle.db
    .selectFrom('devices as d')
    .innerJoin('deployables as p', 'p.device_id', 'd.id')
    .innerJoin('attach_handles as h', 'h.deployable_id', 'p.id')
    .select(['d.uuid as device', 'd.lifecycle', 'p.uuid as deployable', 'h.uuid as handle'])
    .where('d.hostname', '=', HOST)
    .orderBy('h.uuid')
    .execute()
  return rows
}

/** Starts an agent on HOST with the fake driver (serial `FAKE-SN-1`) and its cache in `stateDir`. */
function startAgent(bus: MessageBus, stateDir: string, enabledDrivers = ['fake']) {
  return startCore({
    bus,
    log: noopLogger,
    conductor: false,
    agent: {
      host: HOST,
      periodicIntervalMs: 50,
      enabledDrivers,
      driverOptions: { fake: { serial: 'FAKE-SN-1' } },
      hostProbe: createFixtureHostProbe('/nonexistent'),
      stateDir,
    },
  })
}

void describe('stable identity across the agent', () => {
  void it('keeps every uuid through a lost state directory, a restored one, and a driver reinstall', async () => {
    const sqlite = (await testDialects()).find((d) => d.name === 'sqlite')!
    const handle = await sqlite.create()
    const bus = createInProcessBus()
    const root = await mkdtemp(path.join(tmpdir(), 'cyborg-identity-'))
    const stateDir = path.join(root, `agent-${HOST}`)
    const conductor = await startCore({
      db: handle,
      bus,
      log: noopLogger,
      conductor: { saveIntervalMs: 5, maxBatch: 16 },
    })
    try {
      let agent = await startAgent(bus, stateDir)
      const first = await eventually(async () => {
        const rows = await uuidsOf(handle)
        return rows.length > 0 ? rows : undefined
      })
      // The operator's lifecycle: the device is made active, as `ready` then install would.
      await handle.db
        .updateTable('devices')
        .set({ lifecycle: 'active' })
        .where('hostname', '=', HOST)
        .execute()
      const active = first.map((r) => ({ ...r, lifecycle: 'active' }))
      await agent.stop()
      await cp(stateDir, `${stateDir}.saved`, { recursive: true })

      // 1. The state directory is lost: the agent reports everything from scratch.
      await rm(stateDir, { recursive: true, force: true })
      agent = await startAgent(bus, stateDir)
      await eventually(async () => ((await uuidsOf(handle)).length > 0 ? true : undefined))
      await agent.stop()
      assert.deepEqual(await uuidsOf(handle), active, 'after a lost state directory')

      // 2. An old copy of it comes back.
      await rm(stateDir, { recursive: true, force: true })
      await cp(`${stateDir}.saved`, stateDir, { recursive: true })
      agent = await startAgent(bus, stateDir)
      await new Promise((r) => setTimeout(r, 300))
      assert.deepEqual(await uuidsOf(handle), active, 'after a restored state directory')
      await agent.stop()

      // 3. The driver is uninstalled: the device's rows go. Installed again: the same uuids, active.
      agent = await startAgent(bus, stateDir, [])
      await eventually(async () => ((await uuidsOf(handle)).length === 0 ? true : undefined))
      await agent.stop()
      agent = await startAgent(bus, stateDir)
      const back = await eventually(async () => {
        const rows = await uuidsOf(handle)
        return rows.length > 0 ? rows : undefined
      })
      await agent.stop()
      assert.deepEqual(back, active, 'after the driver was uninstalled and installed again')
    } finally {
      await conductor.stop()
      await bus.close()
      await handle.close()
      await rm(root, { recursive: true, force: true })
    }
  })
})
