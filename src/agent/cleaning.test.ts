/**
 * The agent's `cleanUnit` (cleaning.ts) over the real fake driver: it finds the driver by the
 * unit's handle, runs clean and verify, answers with a digest of the evidence; a second request
 * for a unit being cleaned joins the first; an unknown unit or a malformed request is refused by
 * name; `clean = none` answers without cleaning; the agent's stop aborts a clean; an operator's
 * `abortClean` stops a clean and answers only once its driver step has ended, and a later ask for
 * the aborted release cleans nothing.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { createFakeDriver, fakeHandleAddress } from '../drivers/fake/fake.js'
import { createMemoryHostProbe } from '../drivers/driver-contract.case.js'
import type { AcceleratorDriver } from '../drivers/driver.js'
import { noopLogger } from '../domain/logger.js'
import { runClean } from '../drivers/clean.js'
import { createUnitCleaner } from './cleaning.js'

const cleanerOver = async (
  options: Record<string, string>,
  controller = new AbortController(),
  counted: { runs: number; running?: number; most?: number } = { runs: 0 },
  extra: {
    abortWaitMs?: number
    batchGraceMs?: number
    wrap?: (d: AcceleratorDriver) => AcceleratorDriver
  } = {},
) => {
  const fake: AcceleratorDriver = createFakeDriver(
    { host: createMemoryHostProbe({}), hostname: 'h1' },
    options,
  )
  const driver = extra.wrap?.(fake) ?? fake
  const devices = await driver.discover()
  return createUnitCleaner({
    owner: async (match) => {
      const device = devices.find(match)
      return device && { driver, device }
    },
    runClean: async (...args) => {
      counted.runs++
      counted.running = (counted.running ?? 0) + 1
      counted.most = Math.max(counted.most ?? 0, counted.running)
      try {
        return await runClean(...args)
      } finally {
        counted.running--
      }
    },
    signal: controller.signal,
    log: noopLogger,
    ...(extra.abortWaitMs === undefined ? {} : { abortWaitMs: extra.abortWaitMs }),
    ...(extra.batchGraceMs === undefined ? {} : { batchGraceMs: extra.batchGraceMs }),
  })
}
/** The fake device's units are numbered from 1. */
const unit = (n: number) => ({
  handle: { type: 'TEST_PCI', info: { ...fakeHandleAddress(n + 1) } },
})
const sha = (text: string) => createHash('sha256').update(text).digest('hex')

void describe('agent: cleanUnit', () => {
  void it('cleans with the owning driver and answers a digest of clean and verify evidence', async () => {
    const cleaner = await cleanerOver({})
    const answer = await cleaner.cleanUnit(unit(1))
    assert.equal(answer.driver, 'fake')
    assert.equal(answer.policy, 'auto')
    assert.equal(answer.method, 'fake')
    assert.equal(
      answer.evidenceSha256,
      sha('fake clean of 0000:0c:00:2\n--- verify\nfake verify of 0000:0c:00:2'),
    )
  })

  void it('joins a clean of the same unit that is running, and runs other units side by side', async () => {
    const counted = { runs: 0 }
    const cleaner = await cleanerOver({ clean_delay_ms: '50' }, new AbortController(), counted)
    const [a, b, c] = await Promise.all([
      cleaner.cleanUnit(unit(0)),
      cleaner.cleanUnit(unit(0)),
      cleaner.cleanUnit(unit(1)),
    ])
    assert.equal(a, b, 'the same answer object: one clean')
    assert.notEqual(a, c)
    assert.deepEqual(counted, { runs: 2, running: 0, most: 2 }, 'two cleans, at the same time')
  })

  void it('answers a late ask for a release already cleaned without cleaning again; a newer release waits for, then follows, a running clean', async () => {
    const counted = { runs: 0 }
    const cleaner = await cleanerOver({ clean_delay_ms: '30' }, new AbortController(), counted)
    const first = await cleaner.cleanUnit({ ...unit(0), ticket: 'release-1' })
    assert.equal(await cleaner.cleanUnit({ ...unit(0), ticket: 'release-1' }), first)
    assert.equal(counted.runs, 1, 'the late ask cleaned nothing')
    const second = cleaner.cleanUnit({ ...unit(0), ticket: 'release-2' })
    const third = cleaner.cleanUnit({ ...unit(0), ticket: 'release-3' })
    await Promise.all([second, third])
    assert.equal(counted.runs, 3, 'each newer release has its own clean, one after the other')
    assert.notEqual(await second, first)
    await assert.rejects(cleaner.cleanUnit({ ...unit(0), ticket: '' }), {
      details: { field: 'ticket' },
    })
  })

  void it('answers clean = none without cleaning, as the operator chose', async () => {
    const cleaner = await cleanerOver({ clean: 'none' })
    const answer = await cleaner.cleanUnit(unit(0))
    assert.deepEqual([answer.policy, answer.method], ['none', 'none'])
  })

  void it('passes the driver failures on by code', async () => {
    const failing = await cleanerOver({ clean_outcome: 'fail' })
    await assert.rejects(failing.cleanUnit(unit(0)), { code: 'CLEAN_FAILED' })
    const refusing = await cleanerOver({ clean_outcome: 'unsupported' })
    await assert.rejects(refusing.cleanUnit(unit(0)), { code: 'CLEAN_UNSUPPORTED' })
  })

  void it('refuses a unit no driver reported, and a malformed request, by name', async () => {
    const cleaner = await cleanerOver({})
    await assert.rejects(cleaner.cleanUnit(unit(99)), { code: 'UNIT_NOT_ON_HOST' })
    await assert.rejects(cleaner.cleanUnit({ handle: { type: 'NOPE', info: {} } } as never), {
      code: 'CLEAN_TARGET_INVALID',
      details: { field: 'handle' },
    })
    await assert.rejects(cleaner.cleanUnit({ ...unit(0), mdevUuid: 'x' }), {
      code: 'UUID_INVALID',
    })
  })

  void it('aborts a running clean when the agent stops (the conductor asks again later)', async () => {
    const controller = new AbortController()
    const cleaner = await cleanerOver({ clean_delay_ms: '10000' }, controller)
    const running = cleaner.cleanUnit(unit(0))
    setTimeout(() => controller.abort(new Error('stopping')), 20)
    await assert.rejects(running, { code: 'CLEAN_ABORTED' })
  })

  void it('abortClean stops a running clean; a later ask for that release cleans nothing', async () => {
    const counted: { runs: number; running?: number } = { runs: 0 }
    const cleaner = await cleanerOver({ clean_delay_ms: '10000' }, new AbortController(), counted)
    assert.deepEqual(await cleaner.abortClean({ ...unit(0), ticket: 'r0' }), { aborted: false })
    const running = cleaner.cleanUnit({ ...unit(0), ticket: 'r1' })
    const refused = assert.rejects(running, { code: 'CLEAN_ABORTED' })
    await new Promise((r) => setTimeout(r, 20))
    assert.deepEqual(await cleaner.abortClean({ ...unit(0), ticket: 'r1' }), { aborted: true })
    await refused
    assert.equal(counted.running, 0, 'no clean runs once abortClean has answered')
    // An ask for the aborted release that comes late (crossing the abort) cleans nothing.
    await assert.rejects(cleaner.cleanUnit({ ...unit(0), ticket: 'r1' }), {
      code: 'CLEAN_ABORTED',
    })
    assert.equal(counted.runs, 1)
    await assert.rejects(cleaner.abortClean({ handle: { type: 'NOPE', info: {} } } as never), {
      details: { field: 'handle' },
    })
  })

  void it('abortClean waits for a driver step that ignores the abort, and says so past its limit', async () => {
    let finish!: () => void
    const stepDone = new Promise<void>((r) => (finish = r))
    const cleaner = await cleanerOver(
      {},
      new AbortController(),
      { runs: 0 },
      {
        abortWaitMs: 50,
        // A step that cannot be stopped (a sanitize the device runs on its own).
        wrap: (d) => ({
          ...d,
          clean: async (t, o) => {
            await stepDone
            return d.clean!(t, o)
          },
        }),
      },
    )
    const running = assert.rejects(cleaner.cleanUnit({ ...unit(0), ticket: 'r1' }), {
      code: 'CLEAN_ABORTED',
    })
    await new Promise((r) => setTimeout(r, 20))
    await assert.rejects(cleaner.abortClean({ ...unit(0), ticket: 'r1' }), {
      code: 'CLEAN_STILL_RUNNING',
    })
    await running // runClean gave up on the step at once; the host step still ran
    finish()
    assert.deepEqual(await cleaner.abortClean({ ...unit(0), ticket: 'r1' }), { aborted: true })
    assert.deepEqual(await cleaner.abortClean({ ...unit(0), ticket: 'r1' }), { aborted: false })
  })

  void it("cleanUnits answers each unit in order; a unit's failure is its own entry", async () => {
    const counted = { runs: 0 }
    const cleaner = await cleanerOver({ clean_delay_ms: '20' }, new AbortController(), counted)
    await cleaner.abortClean({ ...unit(2), ticket: 'aborted' })
    const joined = cleaner.cleanUnit({ ...unit(0), ticket: 'r1' })
    const { results } = await cleaner.cleanUnits({
      units: [
        { ...unit(0), ticket: 'r1' },
        { ...unit(1), ticket: 'r1' },
        {
          handle: {
            type: 'TEST_PCI',
            info: { domain: '0000', bus: 'ff', device: '00', function: '0' },
          },
        },
        { ...unit(2), ticket: 'aborted' },
        { handle: 'nonsense' },
      ] as never,
    })
    assert.equal(results.length, 5)
    assert.ok(results[0]!.ok && results[1]!.ok)
    assert.equal(results[0]!.ok && results[0]!.result.method, 'fake')
    assert.deepEqual(results[0], { ok: true, result: await joined }, 'joined the running clean')
    assert.equal(counted.runs, 2, 'units 0 and 1 once each; nothing for the refused ones')
    const codes = results.slice(2).map((r) => (r.ok ? 'ok' : r.error.code))
    assert.deepEqual(codes, ['UNIT_NOT_ON_HOST', 'CLEAN_ABORTED', 'CLEAN_TARGET_INVALID'])
    for (const bad of [{}, { units: [] }, { units: Array(257).fill(unit(0)) }])
      await assert.rejects(cleaner.cleanUnits(bad as never), { details: { field: 'units' } })
  })

  void it('cleanUnits answers a unit still cleaning CLEAN_RUNNING once the others are done; the next ask joins it', async () => {
    const counted = { runs: 0 }
    const cleaner = await cleanerOver({ clean_delay_ms: '150' }, new AbortController(), counted, {
      batchGraceMs: 10,
    })
    const early = cleaner.cleanUnit({ ...unit(0), ticket: 'r1' })
    await new Promise((r) => setTimeout(r, 100))
    const { results } = await cleaner.cleanUnits({
      units: [
        { ...unit(0), ticket: 'r1' },
        { ...unit(1), ticket: 'r1' },
      ],
    })
    assert.deepEqual(results[0], { ok: true, result: await early })
    assert.equal(!results[1]!.ok && results[1]!.error.code, 'CLEAN_RUNNING')
    const late = await cleaner.cleanUnit({ ...unit(1), ticket: 'r1' })
    assert.equal(late.method, 'fake')
    assert.equal(counted.runs, 2, 'the ask after CLEAN_RUNNING joined the running clean')
  })
})
