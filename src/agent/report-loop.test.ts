/**
 * The agent's period (report-loop.ts) over recording steps: a report confirmed by heartbeat needs
 * no plain one; a failed report still heartbeats and publishes telemetry; the next tick is
 * scheduled only while the agent runs; a heartbeat that fails is logged, never thrown.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { UnavailableError } from '../domain/errors.js'
import { noopLogger } from '../domain/logger.js'
import { systemClock } from '../domain/time.js'
import type { ConductorRpc } from '../rpc/conductor-rpc.js'
import { heartbeat, tick, type ReportLoopDeps } from './report-loop.js'

const unchanged = { changed: false, added: 0, updated: 0, removed: 0, pending: 0 }

function setup(opts: { confirm?: boolean; fail?: boolean; running?: boolean } = {}) {
  const steps: string[] = []
  const deps: ReportLoopDeps = {
    clock: systemClock,
    log: noopLogger,
    periodicIntervalMs: 600_000,
    running: () => opts.running ?? true,
    // Like the agent's, the discovery runs after what is queued: never within the call.
    discoverNow: async () => {
      await Promise.resolve()
      steps.push('report')
      if (opts.fail) throw new UnavailableError('conductor down')
      if (opts.confirm) deps.memo.beat = true
      return unchanged
    },
    heartbeat: async () => void steps.push('heartbeat'),
    publishTelemetry: async () => void steps.push('telemetry'),
    memo: { beat: true },
    period: { ticking: Promise.resolve() },
  }
  return { deps, steps }
}

describe('report loop', () => {
  it('a report confirmed by heartbeat needs no plain one; the next tick is scheduled', async () => {
    const { deps, steps } = setup({ confirm: true })
    await tick(deps)
    assert.deepEqual(steps, ['report', 'telemetry'])
    assert.ok(deps.period.timer)
    clearTimeout(deps.period.timer)
  })

  it('a sent or failed report is followed by a plain heartbeat (the flag resets each period)', async () => {
    for (const fail of [false, true]) {
      const { deps, steps } = setup({ fail })
      await tick(deps)
      assert.deepEqual(steps, ['report', 'heartbeat', 'telemetry'])
      clearTimeout(deps.period.timer)
    }
  })

  it('a stopping agent publishes nothing and schedules nothing', async () => {
    const { deps, steps } = setup({ running: false })
    await tick(deps)
    assert.deepEqual(steps, ['report', 'heartbeat'])
    assert.equal(deps.period.timer, undefined)
  })

  it('heartbeat: a failure is logged, never thrown', async () => {
    const sent: unknown[] = []
    const conductor = {
      heartbeat: async (req: unknown) => {
        sent.push(req)
        throw new UnavailableError('conductor down')
      },
    } as unknown as Pick<ConductorRpc, 'heartbeat' | 'reportInventory'>
    await heartbeat({ conductor, host: 'h1', version: 'v', log: noopLogger })
    assert.deepEqual(sent, [{ host: 'h1', binary: 'cyborg-agent', version: 'v' }])
  })
})
