import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { IDLE_GC_DEFAULTS, shouldCollect, startIdleGc } from './idle-gc.js'

const MB = 2 ** 20
const last = { liveBytes: 30 * MB, at: 0, tookMs: 100 }
const idleAndGrown = { utilization: 0.01, committedBytes: 40 * MB, now: 60_000 }

void describe('idle GC', () => {
  void it('collects when the loop was idle, the heap grew and the gap has passed', () => {
    assert.equal(shouldCollect(idleAndGrown, last, IDLE_GC_DEFAULTS), true)
  })

  void it('never under load, below the growth, or within the gap', () => {
    const o = IDLE_GC_DEFAULTS
    assert.equal(shouldCollect({ ...idleAndGrown, utilization: 0.2 }, last, o), false)
    assert.equal(shouldCollect({ ...idleAndGrown, committedBytes: 37 * MB }, last, o), false)
    assert.equal(shouldCollect({ ...idleAndGrown, now: 9_000 }, last, o), false)
  })

  void it('waits 50 times what the last collection took, when that is more than 10 s', () => {
    const slow = { ...last, tookMs: 400 }
    const o = IDLE_GC_DEFAULTS
    assert.equal(shouldCollect({ ...idleAndGrown, now: 19_000 }, slow, o), false)
    assert.equal(shouldCollect({ ...idleAndGrown, now: 20_000 }, slow, o), true)
  })

  void it('runs a full, last-resort GC on an idle process, and stops', async () => {
    const calls: unknown[] = []
    const gc = ((options?: unknown) => void calls.push(options)) as NodeJS.GCFunction
    const stop = startIdleGc(
      { checkMs: 5, idleBelow: 1.01, growthBytes: 0, minGapMs: 0, costFactor: 0 },
      gc,
    )
    await sleep(50)
    await stop()
    const seen = calls.length
    assert.ok(seen > 0)
    assert.deepEqual(calls[0], { type: 'major', execution: 'sync', flavor: 'last-resort' })
    await sleep(30)
    assert.equal(calls.length, seen)
  })

  void it('does nothing without --expose-gc', async () => {
    await startIdleGc(IDLE_GC_DEFAULTS, undefined)()
  })
})
