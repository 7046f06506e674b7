/**
 * The outbox replay on start (outbox-replay.ts): oldest first, each acknowledged; another host's
 * report skipped; the first failure stops it (what is left stays); a stopping agent replays no more.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { noopLogger } from '../domain/logger.js'
import { noopMetrics } from '../domain/metrics.js'
import type { InventorySnapshot } from '../domain/inventory/inventory.js'
import type { ConductorRpc } from '../rpc/conductor-rpc.js'
import { UnavailableError } from '../domain/errors.js'
import { replayOutbox, type OutboxReplayDeps } from './outbox-replay.js'

const snap = (host: string, hash: string): InventorySnapshot => ({ host, hash, devices: [] })

function setup(pending: InventorySnapshot[], opts: { failAt?: string; stopAfter?: number } = {}) {
  const sent: string[] = []
  const acked: string[] = []
  const deps: OutboxReplayDeps = {
    conductor: {
      async reportInventory(req: InventorySnapshot & { autoActivate: boolean }) {
        if (req.hash === opts.failAt) throw new UnavailableError('conductor down')
        sent.push(`${req.hash} ${String(req.autoActivate)}`)
        return { changed: true, added: 0, updated: 0, removed: 0, pending: 0 }
      },
    } as unknown as Pick<ConductorRpc, 'heartbeat' | 'reportInventory'>,
    host: 'h1',
    autoActivate: true,
    placementRoot: {},
    cache: {
      saveSnapshot: async () => {},
      acknowledge: async (s) => void acked.push(s.hash),
      pending: async () => pending,
    },
    metrics: noopMetrics,
    log: noopLogger,
    running: () => opts.stopAfter === undefined || sent.length < opts.stopAfter,
  }
  return { deps, sent, acked }
}

describe('outbox replay', () => {
  it('sends oldest first and acknowledges each; skips another host’s report', async () => {
    const { deps, sent, acked } = setup([snap('h1', 'a'), snap('other', 'b'), snap('h1', 'c')])
    await replayOutbox(deps)
    assert.deepEqual(sent, ['a true', 'c true'])
    assert.deepEqual(acked, ['a', 'c'])
  })

  it('stops at the first failure, leaving the rest unacknowledged', async () => {
    const { deps, sent, acked } = setup([snap('h1', 'a'), snap('h1', 'b'), snap('h1', 'c')], {
      failAt: 'b',
    })
    await replayOutbox(deps)
    assert.deepEqual(sent, ['a true'])
    assert.deepEqual(acked, ['a'])
  })

  it('a stopping agent replays no more; a cache without an outbox replays nothing', async () => {
    const { deps, sent } = setup([snap('h1', 'a'), snap('h1', 'b')], { stopAfter: 1 })
    await replayOutbox(deps)
    assert.deepEqual(sent, ['a true'])
    const bare = setup([])
    delete bare.deps.cache.pending
    await replayOutbox(bare.deps)
    assert.deepEqual(bare.sent, [])
  })
})
