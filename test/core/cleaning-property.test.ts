/**
 * Clean before reuse as a property, on every database (issue 18; docs/cleaning.md). Random
 * sequences of v2 binds, unbinds and deletes, v1 attaches and detaches, the agent answering one of
 * its oldest clean calls (ok, CLEAN_FAILED, or no answer), operator re-cleans and overrides, sweeps
 * (before and after the retry interval) and conductor crashes (its agent calls lost, a new
 * conductor on the same database) keep, after every step:
 * - no bind or attach claims a unit that was cleaning (pending or failed) just before it, no request
 *   names a cleaning unit, no unit is named twice, and a unit is `in_use` iff held or cleaning;
 * - a sweep asks again exactly the pending units whose last ask is past the retry interval;
 * and once the agent answers ok to everything, failed units are re-cleaned and pending ones swept,
 * no unit is left cleaning and every allocation record of the ledger has a later `clean` record
 * (ok or skipped) or an `override` for its interval: no interval ends without its clean.
 * One database per dialect; each run starts from a clean slate on it, with a new conductor.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { createConductor, type Conductor } from '../../src/conductor/conductor.js'
import { ConflictError, DriverError, UnavailableError } from '../../src/domain/errors.js'
import { noopLogger } from '../../src/domain/logger.js'
import { formatTimestamp } from '../../src/domain/time.js'
import type { CleanUnitResult } from '../../src/rpc/agent-rpc.js'
import { inventoryHash } from '../../src/rpc/inventory-hash.js'
import { testDialects } from '../support/db.js'
import { sampleDevice } from '../support/sample-inventory.js'

const RETRY_MS = 60_000
const NUM_RUNS = 15
const OK: CleanUnitResult = {
  driver: 'fake',
  policy: 'auto',
  method: 'fake',
  evidenceSha256: 'c'.repeat(64),
  durationMs: 0,
}
let vms = 0
const vm = () => `c1ea0000-0000-4000-8000-${String(++vms).padStart(12, '0')}`
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
/** Refusals that are answers, not failures: no free unit, a fenced device, held through v2. */
const refused = (err: unknown) => {
  if (!(err instanceof ConflictError)) throw err
  return undefined
}

const i = fc.nat({ max: 31 })
const dev = fc.integer({ min: 0, max: 1 })
const outcome = fc.constantFrom('ok' as const, 'ok' as const, 'fail' as const, 'silent' as const)
const op = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('bind' as const) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('unbind' as const), i }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), i }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('attach' as const), dev }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('detach' as const), dev }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('answer' as const),
      how: outcome,
      nth: fc.nat({ max: 2 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('reclean' as const), dev, force: fc.boolean() }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('sweep' as const), late: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('crash' as const) }) },
)
type Op = typeof op extends fc.Arbitrary<infer T> ? T : never
/**
 * Always run: the agent answers an ask made before the operator forced the unit back; the unit
 * has been bound and released again since, and that old answer must not count as its new clean.
 */
const STALE_ANSWER: Op[] = [
  { kind: 'bind' },
  { kind: 'unbind', i: 0 },
  { kind: 'reclean', dev: 0, force: true },
  { kind: 'bind' },
  { kind: 'unbind', i: 0 },
  { kind: 'answer', how: 'ok', nth: 0 },
]

for (const dialect of await testDialects()) {
  await test(`cleaning property on ${dialect.name}`, { skip: dialect.skip }, async () => {
    const db = await dialect.create()
    let now = new Date('2026-11-27T06:00:00Z')
    const clock = { now: () => now }
    /** The agent's clean calls not answered yet, oldest first; how many came in all. */
    const calls: { resolve(r: CleanUnitResult): void; reject(e: unknown): void }[] = []
    let received = 0
    const cleanAgentFor = () => ({
      cleanUnit: () =>
        new Promise<CleanUnitResult>((resolve, reject) => {
          received++
          calls.push({ resolve, reject })
        }),
      // A force's abort: the agent confirms; its asks still answer later (a stale answer must
      // not count as the clean of a later interval, STALE_ANSWER).
      abortClean: async () => ({ aborted: false }),
    })
    let live = true
    const start = () => {
      live = true
      return createConductor(
        { db, log: noopLogger, clock, cleanAgentFor },
        {
          saveIntervalMs: 0,
          reapIntervalMs: 0,
          heartbeats: false,
          webhooks: false,
          cleaning: { retryIntervalMs: RETRY_MS, sweepIntervalMs: 0 },
        },
      )
    }
    let conductor: Conductor = start()
    /** Stops the conductor, its agent calls lost first (as a dropped connection would). */
    const halt = async () => {
      for (const c of calls.splice(0)) c.reject(new UnavailableError('connection lost'))
      if (live) await conductor.stop()
      live = false
    }
    const handles = () =>
      db.db
        .selectFrom('attach_handles')
        .select(['id', 'in_use', 'clean_state', 'clean_attempt_at'])
        .orderBy('id')
        .execute()
    const arqs = () =>
      db.db
        .selectFrom('accelerator_requests')
        .select(['uuid', 'state', 'device_profile_id', 'attach_handle_id'])
        .orderBy('id')
        .execute()
    const cleaningIds = async () =>
      new Set((await handles()).filter((h) => h.clean_state !== null).map((h) => h.id))
    const until = async (cond: () => Promise<boolean> | boolean, what: string) => {
      for (let n = 0; n < 1000; n++) {
        if (await cond()) return
        await sleep(2)
      }
      throw new Error(`timed out waiting for ${what}`)
    }
    /**
     * Waits until the asks of a step have reached the agent: the units a release or a re-clean left
     * unasked, and the `swept` units of a sweep, all stamped now, with one call each.
     */
    const asksLanded = (before: number, swept = 0) =>
      until(async () => {
        const got = received - before // a call comes after its claim has committed
        const pending = (await handles()).filter((h) => h.clean_state === 'pending')
        if (pending.some((h) => h.clean_attempt_at === null)) return false
        const asked = pending.filter((h) => h.clean_attempt_at === formatTimestamp(now)).length
        assert.ok(got <= asked, 'more agent calls than units asked')
        return got === asked && got >= swept
      }, 'the asks of the step')

    try {
      const devices = [0, 2].map((n) =>
        sampleDevice('h1', n, { handles: 2, attachType: 'TEST_PCI' }),
      )
      const hash = inventoryHash(devices)
      await conductor.reportInventory({ host: 'h1', hash, devices, autoActivate: true })
      const groups = [{ 'resources:PGPU': '1' }]
      await conductor.createDeviceProfile({ name: 'gpu', description: null, groups })
      const deployables = await db.db
        .selectFrom('deployables as p')
        .innerJoin('devices as d', 'd.id', 'p.device_id')
        .select(['p.uuid as acc', 'd.uuid as device'])
        .orderBy('p.id')
        .execute()
      assert.deepEqual([deployables.length, (await handles()).length], [2, 4])
      await halt()

      /** The agent answers its `nth` oldest call; resolves once the conductor has taken it in. */
      const answer = async (how: 'ok' | 'fail' | 'silent', nth = 0) => {
        const [call] = calls.splice(nth % Math.max(1, calls.length), 1)
        if (!call) return
        const ops = conductor.stats().ops
        if (how === 'silent') {
          call.reject(new UnavailableError('no answer', { code: 'RPC_TIMEOUT' }))
          return void (await sleep(1))
        }
        if (how === 'ok') call.resolve(OK)
        else call.reject(new DriverError('fake: clean_outcome = fail', { code: 'CLEAN_FAILED' }))
        // The settle's write has started; a write queued after it returns once it has committed.
        await until(() => conductor.stats().ops > ops, 'the settle')
        await conductor.heartbeat({ host: 'h1', binary: 'cyborg-agent', version: 'test' })
      }
      /** Invariant 1: a bind or attach never claims a unit that was cleaning before it. */
      const claimChecked = async (claim: () => Promise<string | undefined>) => {
        const cleaning = await cleaningIds()
        const uuid = await claim().catch(refused)
        const held = (await arqs()).find((a) => a.uuid === uuid)?.attach_handle_id
        if (held != null) assert.ok(!cleaning.has(held), `unit ${held} claimed while cleaning`)
      }

      /** Applies one step; resolves with how many units a sweep asked again. */
      const apply = async (o: Op): Promise<number> => {
        const v2 = (await arqs()).filter((a) => a.device_profile_id !== null)
        const bound = v2.filter((a) => a.state === 'Bound')
        switch (o.kind) {
          case 'bind':
            await claimChecked(async () => {
              const ask = { deviceProfileName: 'gpu', projectId: 'p1', maxArqs: 8 }
              const [arq] = await conductor.createArqs(ask)
              const binding = { hostname: 'h1', instanceUuid: vm() }
              await conductor.bindArqs({ bindings: { [arq!.uuid]: binding } })
              return arq!.uuid
            })
            break
          case 'attach':
            await claimChecked(async () => {
              const req = { uuid: deployables[o.dev]!.acc, target: { instanceUuid: vm() } }
              return (await conductor.attachAccelerator(req)).attachment
            })
            break
          case 'unbind':
            if (bound.length > 0)
              await conductor.unbindArqs({ uuids: [bound[o.i % bound.length]!.uuid] })
            break
          case 'delete':
            if (v2.length > 0) await conductor.deleteArqs({ uuids: [v2[o.i % v2.length]!.uuid] })
            break
          case 'detach':
            await conductor.detachAccelerator({ uuid: deployables[o.dev]!.acc }).catch(refused)
            break
          case 'answer':
            await answer(o.how, o.nth)
            break
          case 'reclean': {
            const req = { uuid: deployables[o.dev]!.device, force: o.force, userId: 'admin-1' }
            assert.equal((await conductor.cleanDevice(req)).forced, o.force)
            break
          }
          case 'sweep': {
            const pending = (await handles()).filter((h) => h.clean_state === 'pending').length
            if (o.late) now = new Date(now.getTime() + RETRY_MS + 1000)
            const swept = await conductor.sweepCleaning()
            assert.equal(swept, o.late ? pending : 0, 'units asked again by the sweep')
            return swept
          }
          case 'crash':
            await halt()
            conductor = start()
            break
        }
        return 0
      }

      /** What holds after every step. */
      const check = async () => {
        const cleaning = await cleaningIds()
        const named = (await arqs()).flatMap((a) => a.attach_handle_id ?? [])
        assert.equal(new Set(named).size, named.length, 'a unit named by two requests')
        for (const id of named) assert.ok(!cleaning.has(id), `unit ${id} cleaning but held`)
        const busy = new Set([...cleaning, ...named]) // in use: held or cleaning, nothing else
        for (const h of await handles())
          assert.equal(Number(h.in_use) === 1, busy.has(h.id), `unit ${h.id}: in use iff busy`)
      }

      /** The agent answers ok; failed units are re-cleaned and pending ones swept, until none is left. */
      const drain = async () => {
        for (let round = 0; round < 6; round++) {
          while (calls.length > 0) await answer('ok')
          const left = (await handles()).filter((h) => h.clean_state !== null)
          if (left.length === 0) break
          now = new Date(now.getTime() + RETRY_MS + 1000)
          let before = received
          if (left.some((h) => h.clean_state === 'failed'))
            for (const d of deployables) await conductor.cleanDevice({ uuid: d.device })
          await asksLanded(before)
          now = new Date(now.getTime() + 1)
          before = received
          await asksLanded(before, await conductor.sweepCleaning())
        }
        await conductor.cleaningIdle()
        await conductor.drainCustody()
      }

      const property = fc.asyncProperty(
        fc.array(op, { minLength: 5, maxLength: 25, size: 'max' }),
        async (ops) => {
          // A clean slate: no requests, every unit free, devices healthy; the ledger only grows.
          await db.db.deleteFrom('accelerator_requests').execute()
          await db.db
            .updateTable('attach_handles')
            .set({ in_use: 0, clean_state: null, clean_since: null, clean_attempt_at: null })
            .set({ clean_allocation_uuid: null })
            .execute()
          await db.db.updateTable('devices').set({ health: 'ok', health_reason: null }).execute()
          const last = await db.db
            .selectFrom('custody_records')
            .select((eb) => eb.fn.max('id').as('id'))
            .executeTakeFirst()
          const since = Number(last?.id ?? 0)
          conductor = start()
          try {
            for (const o of ops) {
              now = new Date(now.getTime() + 1) // each step's asks carry their own stamp
              const before = received
              await asksLanded(before, await apply(o))
              await check()
            }
            await drain()
            assert.deepEqual([...(await cleaningIds())], [], 'units left cleaning after the drain')
            const records = await db.db
              .selectFrom('custody_records')
              .select(['id', 'uuid', 'kind', 'allocation_uuid', 'clean_result'])
              .where('id', '>', since)
              .orderBy('id')
              .execute()
            for (const a of records.filter((r) => r.kind === 'allocation')) {
              const closing = records.find(
                (r) =>
                  r.id > a.id &&
                  r.allocation_uuid === a.uuid &&
                  (r.kind === 'override' ||
                    (r.kind === 'clean' && ['ok', 'skipped'].includes(r.clean_result!))),
              )
              assert.ok(closing, `allocation ${a.uuid} has no clean or override after it`)
            }
          } finally {
            await halt()
          }
        },
      )
      await fc.assert(property, { numRuns: NUM_RUNS, examples: [[STALE_ANSWER]] })
    } finally {
      await halt()
      await db.close()
    }
  })
}
