/**
 * One report (report.ts) over the real fake driver and a recording conductor: a failing driver
 * stops the report (DISCOVERY_FAILED, naming it) and nothing is sent; an accepted hash is only
 * confirmed by heartbeat the next time; a report the conductor left pending is sent again; a
 * failing cache never stops a report.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createFakeDriver } from '../drivers/fake/fake.js'
import { createFixtureHostProbe } from '../drivers/host-probe/fixture-host-probe.js'
import type { AcceleratorDriver } from '../drivers/driver.js'
import { DriverError } from '../domain/errors.js'
import { noopLogger } from '../domain/logger.js'
import { noopMetrics, type Metrics } from '../domain/metrics.js'
import { systemClock } from '../domain/time.js'
import type { InventorySnapshot } from '../domain/inventory/inventory.js'
import type { ConductorRpc, InventoryReportResult } from '../rpc/conductor-rpc.js'
import type { AgentCache } from './agent-types.js'
import type { DriverRunState } from './driver-list.js'
import {
  discoveryFailed,
  driverStates,
  reportOnce,
  type ReportDeps,
  type ReportMemo,
} from './report.js'

const fake = createFakeDriver({ host: createFixtureHostProbe('/nonexistent'), hostname: 'h1' })
const broken: AcceleratorDriver = {
  name: 'broken',
  deviceType: 'GPU',
  discover: () => Promise.reject(new Error('nvidia-smi exploded')),
}

function setup(drivers: AcceleratorDriver[], opts: { pending?: number; cache?: AgentCache } = {}) {
  const sent: InventorySnapshot[] = []
  const beats: { inventoryHash?: string }[] = []
  const counted: string[] = []
  const recorded: DriverRunState[][] = []
  const conductor = {
    async reportInventory(req: InventorySnapshot): Promise<InventoryReportResult> {
      sent.push(req)
      return { changed: true, added: 1, updated: 0, removed: 0, pending: opts.pending ?? 0 }
    },
    async heartbeat(req: { inventoryHash?: string }) {
      beats.push(req)
      return { inventoryCurrent: req.inventoryHash === sent.at(-1)?.hash }
    },
  } as unknown as Pick<ConductorRpc, 'heartbeat' | 'reportInventory'>
  const metrics: Metrics = {
    ...noopMetrics,
    inc: (name, labels) => void counted.push(`${name} ${String(labels?.result)}`),
  }
  const memo: ReportMemo = { beat: false }
  const deps: ReportDeps = {
    conductor,
    host: 'h1',
    version: 'test',
    autoActivate: false,
    placementRoot: {},
    cache: opts.cache ?? { saveSnapshot: async () => {}, acknowledge: async () => {} },
    metrics,
    log: noopLogger,
    admin: { ready: async () => {}, enabled: () => drivers, recordDiscovery: () => {} },
    remote: { feed: async () => {} },
    listing: { record: (states) => void recorded.push([...states]) },
    clock: systemClock,
    signal: new AbortController().signal,
    discoverTimeoutMs: 10_000,
    memo,
  }
  return { deps, sent, beats, counted, recorded, memo }
}

describe('one report', () => {
  it('a failing driver stops the report: DISCOVERY_FAILED naming it, nothing sent, states recorded', async () => {
    const { deps, sent, recorded } = setup([fake, broken])
    await assert.rejects(reportOnce(deps), (err: unknown) => {
      assert.ok(err instanceof DriverError)
      assert.equal(err.code, 'DISCOVERY_FAILED')
      assert.match(err.message, /discovery failed for broken/)
      return true
    })
    assert.equal(sent.length, 0)
    assert.deepEqual(
      recorded[0]!.map((s) => [s.driver, s.ok, s.error?.message]),
      [
        ['fake', true, undefined],
        ['broken', false, 'driver broken failed: nvidia-smi exploded'],
      ],
    )
  })

  it('an accepted hash is confirmed by heartbeat next time instead of being sent again', async () => {
    const { deps, sent, beats, counted, memo } = setup([fake])
    const first = await reportOnce(deps)
    assert.equal(first.changed, true)
    assert.equal(memo.accepted, sent[0]!.hash)
    assert.equal(memo.beat, false)
    const second = await reportOnce(deps)
    assert.deepEqual(second, { changed: false, added: 0, updated: 0, removed: 0, pending: 0 })
    assert.equal(sent.length, 1)
    assert.deepEqual(beats, [
      { host: 'h1', binary: 'cyborg-agent', version: 'test', inventoryHash: sent[0]!.hash },
    ])
    assert.equal(memo.beat, true)
    assert.deepEqual(counted, ['cyborg_reports_total sent', 'cyborg_reports_total skipped'])
  })

  it('a report the conductor left pending is sent in full again', async () => {
    const { deps, sent, beats, memo } = setup([fake], { pending: 1 })
    await reportOnce(deps)
    await reportOnce(deps)
    assert.equal(memo.accepted, undefined)
    assert.equal(sent.length, 2)
    assert.equal(beats.length, 0)
  })

  it('a failing cache is logged, never fatal', async () => {
    const failing: AgentCache = {
      saveSnapshot: () => Promise.reject(new Error('disk full')),
      acknowledge: () => Promise.reject(new Error('disk full')),
      saveDriverStates: () => Promise.reject(new Error('disk full')),
    }
    const { deps, sent } = setup([fake], { cache: failing })
    assert.equal((await reportOnce(deps)).changed, true)
    assert.equal(sent.length, 1)
  })

  it('driverStates and discoveryFailed: each run with its error, each failure named', () => {
    const err = new DriverError('boom', { code: 'X' })
    const runs = [
      { driver: 'a', ok: true, deviceCount: 2, durationMs: 1 },
      { driver: 'b', ok: false, deviceCount: 0, durationMs: 3 },
    ]
    assert.deepEqual(driverStates(runs, [{ driver: 'b', error: err }], 'T'), [
      { ...runs[0], at: 'T' },
      { ...runs[1], at: 'T', error: { code: 'X', message: 'boom' } },
    ])
    assert.deepEqual(discoveryFailed([{ driver: 'b', error: err }]).details, {
      failures: [{ driver: 'b', code: 'X', message: 'boom' }],
    })
  })
})
