/**
 * The agent's file cache through startCore (SQLite only): a report made while the conductor is
 * away survives an agent restart in the outbox and reaches the conductor once it is up.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { testDialects } from '../support/db.js'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import { startCore } from '../../src/main/core.js'
import { createFileAgentCache } from '../../src/agent/local-cache.js'
import { createFixtureHostProbe } from '../../src/drivers/host-probe/fixture-host-probe.js'
import { noopLogger } from '../../src/domain/logger.js'
import { eventually, recordingLogger } from './helpers.js'

void describe('agent outbox', () => {
  void it('replays a report lost to a down conductor after the agent restarts', async () => {
    const stateDir = await mkdtemp(path.join(tmpdir(), 'cyborg-agent-state-'))
    const sqlite = (await testDialects()).find((d) => d.name === 'sqlite')!
    const handle = await sqlite.create()
    const bus = createInProcessBus()
    const host = 'outbox-agent'
    const agentOptions = {
      host,
      periodicIntervalMs: 60_000,
      enabledDrivers: ['fake'],
      hostProbe: createFixtureHostProbe('/nonexistent'),
      stateDir,
    }
    try {
      const firstLog = recordingLogger()
      const first = await startCore({
        bus,
        log: firstLog,
        conductor: false,
        rpcTimeoutMs: 80,
        agent: agentOptions,
      })
      await eventually(async () =>
        firstLog.lines.some((l) => l.msg.startsWith('inventory report failed')),
      )
      await first.stop()
      const pending = await createFileAgentCache(stateDir, { log: noopLogger }).pending()
      assert.equal(pending.length, 1, 'the report waits in the outbox')

      const conductor = await startCore({
        db: handle,
        bus,
        log: noopLogger,
        conductor: { saveIntervalMs: 5, maxBatch: 16 },
      })
      const log = recordingLogger()
      const second = await startCore({
        bus,
        log,
        conductor: false,
        rpcTimeoutMs: 5000,
        agent: agentOptions,
      })
      try {
        await eventually(async () =>
          log.lines.some((l) => l.msg === 'replayed an unacknowledged report'),
        )
        const device = await eventually(() =>
          handle.db
            .selectFrom('devices')
            .selectAll()
            .where('hostname', '=', host)
            .executeTakeFirst(),
        )
        assert.equal(device.lifecycle, 'inactive')
        await second.agent!.discoverNow()
        const cache = createFileAgentCache(stateDir, { log: noopLogger })
        assert.deepEqual(await cache.pending(), [])
        assert.equal(await cache.lastAcknowledgedHash(), pending[0]!.hash)
        // The replay was the first report; the discovery after it changed nothing.
        const replayed = log.lines.find((l) => l.msg === 'replayed an unacknowledged report')!
        assert.equal((replayed.obj as { changed: boolean }).changed, true)
      } finally {
        await second.stop()
        await conductor.stop()
      }
    } finally {
      await bus.close()
      await handle.close()
      await rm(stateDir, { recursive: true, force: true })
    }
  })
})
