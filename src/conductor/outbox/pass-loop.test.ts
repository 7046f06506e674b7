/**
 * The pass loop on its own, with batches the test scripts (and holds open by hand): passes end
 * with a short batch, never overlap, share wakes, retry after a failure with `retry`, and stop
 * with one last pass. Outcomes only: no assertion on how long anything took.
 */
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import type { Logger } from '../../domain/logger.js'
import { boundedRounds, createPassLoop, type PassLoopOptions } from './pass-loop.js'

/** A logger that keeps the messages it was given. */
function recordingLog() {
  const lines: string[] = []
  const keep = (obj: unknown, msg?: unknown) => {
    lines.push(typeof obj === 'string' ? obj : String(msg ?? ''))
  }
  const log: Logger = { error: keep, warn: keep, info: keep, debug: keep, child: () => log }
  return { log, lines }
}

const messages = {
  failed: 'batch failed',
  failedStopping: 'batch failed while stopping',
  recovered: 'works again',
  pollFailed: 'poll failed',
}

/** Batches answering `script` in order (then 0); `hold()` makes the next one wait for `release()`. */
function scripted(script: (number | undefined | Error)[]) {
  let calls = 0
  let gate: { opened: Promise<void>; open: () => void } | undefined
  let open = () => {}
  const called: (() => void)[] = []
  return {
    calls: () => calls,
    hold() {
      const opened = new Promise<void>((resolve) => (open = resolve))
      gate = { opened, open }
    },
    release: () => open(),
    /** Resolves once `batch` has been called `n` times in all. */
    reached(n: number) {
      return new Promise<void>((resolve) => {
        const check = () => (calls >= n ? resolve() : called.push(check))
        check()
      })
    },
    async batch(): Promise<number | undefined> {
      calls++
      for (const check of called.splice(0)) check()
      const held = gate
      gate = undefined
      if (held) await held.opened
      const next = script.shift() ?? 0
      if (next instanceof Error) throw next
      return next
    },
  }
}

function loopOver(
  batches: ReturnType<typeof scripted>,
  options: Partial<PassLoopOptions> = {},
  extra: {
    hasWork?: () => Promise<boolean>
    chores?: { intervalMs: number; run(): Promise<unknown> }[]
  } = {},
) {
  const { log, lines } = recordingLog()
  const loop = createPassLoop(
    { batch: () => batches.batch(), log, messages, ...extra },
    { batchSize: 10, coalesceMs: 0, pollIntervalMs: 3_600_000, ...options },
  )
  return { loop, lines }
}

describe('pass loop', () => {
  test('a pass runs batches until the first short one and resolves with the rows done', async () => {
    const batches = scripted([10, 10, 3, 10])
    const { loop } = loopOver(batches)
    assert.equal(await loop.drain(), 23)
    assert.equal(batches.calls(), 3)
    // A lock held elsewhere (undefined) or nothing to do (0) ends a pass too.
    const locked = scripted([undefined, 10])
    assert.equal(await loopOver(locked).loop.drain(), 0)
    assert.equal(locked.calls(), 1)
  })

  test('without a batch size a pass is one batch', async () => {
    const batches = scripted([10, 10])
    const { loop } = loopOver(batches, { batchSize: undefined })
    assert.equal(await loop.drain(), 10)
    assert.equal(batches.calls(), 1)
  })

  test('passes never overlap: asks during a pass share one more pass after it', async () => {
    const batches = scripted([1, 2, 3])
    const { loop } = loopOver(batches, { coalesceMs: undefined })
    batches.hold()
    const first = loop.run()
    for (let i = 0; i < 5; i++) loop.wake()
    assert.equal(loop.run(), first, 'an ask during a pass gets that pass')
    assert.equal(batches.calls(), 1)
    batches.release()
    await loop.settled()
    assert.equal(batches.calls(), 2, 'one more pass for all the asks')
    await loop.stop()
  })

  test('wakes in the same turn share one pass', async () => {
    const batches = scripted([1, 1, 1])
    const { loop } = loopOver(batches)
    for (let i = 0; i < 5; i++) loop.wake()
    await batches.reached(1)
    await loop.settled()
    assert.equal(batches.calls(), 1)
    await loop.stop()
  })

  test('without retry a failed batch ends its pass, is logged, and the next pass runs as usual', async () => {
    const batches = scripted([10, new Error('boom'), 4])
    const { loop, lines } = loopOver(batches)
    assert.equal(await loop.drain(), 10)
    assert.deepEqual(lines, ['batch failed'])
    assert.equal(await loop.drain(), 4)
  })

  test('with retry a failure holds wakes back until the retry, which logs the recovery', async () => {
    const batches = scripted([new Error('boom'), 4])
    const { loop, lines } = loopOver(batches, { retry: { initialMs: 1, maxMs: 1 } })
    assert.equal(await loop.drain(), 0)
    loop.wake()
    await batches.reached(2)
    await loop.settled()
    assert.equal(batches.calls(), 2, 'the wake during the back-off asked for nothing')
    assert.deepEqual(lines, ['batch failed', 'works again'])
    await loop.stop()
  })

  test('stop drops a pending wake and runs one last pass', async () => {
    const batches = scripted([5, 6])
    const { loop } = loopOver(batches, { coalesceMs: 3_600_000, lastPass: true })
    loop.wake()
    await loop.stop()
    assert.equal(batches.calls(), 1)
    assert.equal(loop.stopped(), true)
    loop.wake()
    assert.equal(batches.calls(), 1, 'a wake after stop asks for nothing')
    const plain = scripted([5])
    await loopOver(plain).loop.stop()
    assert.equal(plain.calls(), 0, 'no last pass unless asked for')
  })

  test('stop waits for the pass in flight, and skips the last pass while batches are failing', async () => {
    const batches = scripted([new Error('boom'), 6])
    const { loop, lines } = loopOver(batches, {
      retry: { initialMs: 3_600_000, maxMs: 3_600_000 },
      lastPass: true,
    })
    batches.hold()
    const first = loop.run()
    const stopping = loop.stop()
    batches.release()
    await stopping
    assert.equal(await first, 0)
    assert.equal(batches.calls(), 1)
    assert.deepEqual(lines, ['batch failed while stopping'])
  })

  test('the poll runs a pass when there is work, and the chores run from start to stop', async () => {
    const batches = scripted([2])
    let chores = 0
    let looks = 0
    const { loop } = loopOver(
      batches,
      { pollIntervalMs: 1 },
      {
        hasWork: () => Promise.resolve(++looks === 2),
        chores: [{ intervalMs: 1, run: () => Promise.resolve(++chores) }],
      },
    )
    assert.equal(loop.start(), true)
    assert.equal(loop.start(), false, 'started once')
    await batches.reached(1)
    await loop.settled()
    await loop.stop()
    assert.ok(looks >= 2)
    assert.ok(chores >= 1)
    assert.equal(batches.calls(), 1)
    assert.equal(loop.start(), false, 'a stopped loop stays stopped')
  })

  test('without hasWork the poll asks for a pass', async () => {
    const batches = scripted([1])
    const { loop } = loopOver(batches, { pollIntervalMs: 1, coalesceMs: undefined })
    loop.start()
    await batches.reached(1)
    await loop.stop()
  })

  test('a failing poll is logged and the loop goes on', async () => {
    const batches = scripted([1])
    let looks = 0
    const { loop, lines } = loopOver(
      batches,
      { pollIntervalMs: 1 },
      {
        hasWork: () => (++looks === 1 ? Promise.reject(new Error('down')) : Promise.resolve(true)),
      },
    )
    loop.start()
    await batches.reached(1)
    await loop.stop()
    assert.equal(lines[0], 'poll failed')
  })
})

test('bounded rounds stop at a short round, a held lock, or the limit', async () => {
  const rounds = async (answers: (number | undefined)[], limit?: number) => {
    let n = 0
    await boundedRounds(() => Promise.resolve(answers[n++]), limit)
    return n
  }
  assert.equal(await rounds([1000, 1000, 999, 1000]), 3)
  assert.equal(await rounds([1000, undefined, 1000]), 2)
  assert.equal(await rounds([1000, 1000, 1000, 1000], 2), 2)
})
