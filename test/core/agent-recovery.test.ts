/** The agent outlives a conductor that is not up yet, and reports once it is (SQLite only). */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { testDialects } from '../support/db.js'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import { startCore } from '../../src/main/core.js'
import { createFixtureHostProbe } from '../../src/drivers/host-probe/fixture-host-probe.js'
import { noopLogger } from '../../src/domain/logger.js'
import { eventually, recordingLogger } from './helpers.js'

void describe('agent before conductor', () => {
  void it('keeps running while the conductor is away, then reports', async () => {
    const sqlite = (await testDialects()).find((d) => d.name === 'sqlite')!
    const handle = await sqlite.create()
    const bus = createInProcessBus()
    const log = recordingLogger()
    const host = 'early-agent'
    const agentCore = await startCore({
      bus,
      log,
      conductor: false,
      rpcTimeoutMs: 80,
      agent: {
        host,
        periodicIntervalMs: 100,
        enabledDrivers: ['fake'],
        hostProbe: createFixtureHostProbe('/nonexistent'),
      },
    })
    try {
      await eventually(
        async () =>
          log.lines.filter((l) => l.msg.startsWith('inventory report failed')).length >= 2,
      )
      assert.equal(agentCore.agent!.state, 'running')
      assert.ok(log.lines.some((l) => l.msg.startsWith('heartbeat failed')))

      const conductorCore = await startCore({
        db: handle,
        bus,
        log: noopLogger,
        conductor: { saveIntervalMs: 5, maxBatch: 16 },
      })
      try {
        const device = await eventually(() =>
          handle.db
            .selectFrom('devices')
            .selectAll()
            .where('hostname', '=', host)
            .executeTakeFirst(),
        )
        assert.equal(device.lifecycle, 'inactive')
        await eventually(() =>
          handle.db
            .selectFrom('services')
            .selectAll()
            .where('host', '=', host)
            .where('version', '=', '0.1.0')
            .executeTakeFirst(),
        )
        assert.ok(log.lines.some((l) => l.msg === 'inventory reported'))
      } finally {
        await agentCore.stop()
        await conductorCore.stop()
      }
    } finally {
      await agentCore.stop()
      await bus.close()
      await handle.close()
    }
  })
})
