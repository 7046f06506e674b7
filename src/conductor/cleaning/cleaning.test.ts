/**
 * Clean before reuse through an in-process conductor, on every database (docs/cleaning.md): a
 * released unit is `cleaning` (no bind takes it, capacity counts it, the ledger's allocation record
 * waits for its clean), the agent's answer puts it back with a clean record and
 * `accelerator.device.cleaned`; a failure fences it and its device (a healthy report does not lift
 * that); a silent agent leaves it cleaning until the sweep asks again; an operator's re-clean and
 * override, the override recorded with who asked; an override waits for the agent to confirm that
 * no clean runs (abortClean), and without that answer (a silent or old agent) the unit stays out
 * of service with an error naming the host.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { testDialects } from '../../../test/support/db.js'
import { sampleDevice } from '../../../test/support/sample-inventory.js'
import { DriverError, NotFoundError, UnavailableError } from '../../domain/errors.js'
import { noopLogger } from '../../domain/logger.js'
import { inventoryHash } from '../../rpc/inventory-hash.js'
import type { AbortCleanResult, CleanUnitResult } from '../../rpc/agent-rpc.js'
import { listCapacityDeployables } from '../../db/reads/capacity.js'
import { listCleaningUnits } from '../../db/cleaning.js'
import { createConductor } from '../conductor.js'
import type { EventSink, OutboxEvent } from '../outbox/event-sinks.js'

const instance = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`
const OK: CleanUnitResult = {
  driver: 'fake',
  policy: 'auto',
  method: 'fake',
  evidenceSha256: 'a'.repeat(64),
  durationMs: 0,
}

for (const dialect of await testDialects()) {
  await test(`clean before reuse on ${dialect.name}`, { skip: dialect.skip }, async () => {
    const db = await dialect.create()
    let now = new Date('2026-11-26T06:00:00Z')
    const clock = { now: () => now }
    const events: OutboxEvent[] = []
    const sink: EventSink = { name: 'recording', deliver: async (b) => void events.push(...b) }
    /** What the agent answers next; each call is recorded. */
    let answer: () => Promise<CleanUnitResult> = async () => OK
    const asked: unknown[] = []
    /** What the agent answers to an abort; each abort is recorded. */
    let abortAnswer: () => Promise<AbortCleanResult> = async () => ({ aborted: false })
    const aborts: unknown[] = []
    const agentFor = () => ({
      cleanUnit: async (req: unknown) => {
        asked.push(req)
        return answer()
      },
      abortClean: async (req: unknown) => {
        aborts.push(req)
        return abortAnswer()
      },
    })
    const conductor = createConductor(
      { db, log: noopLogger, clock, agentFor: agentFor as never, eventSinks: [sink] },
      {
        saveIntervalMs: 0,
        reapIntervalMs: 0,
        heartbeats: false,
        cleaning: { retryIntervalMs: 60_000, sweepIntervalMs: 0 },
      },
    )
    const settled = async () => {
      await conductor.cleaningIdle()
      await conductor.drainEvents()
      await conductor.drainCustody()
    }
    const handles = () =>
      db.db
        .selectFrom('attach_handles')
        .select(['uuid', 'in_use', 'clean_state', 'clean_allocation_uuid'])
        .orderBy('id')
        .execute()
    const records = () =>
      db.db
        .selectFrom('custody_records')
        .select(['uuid', 'kind', 'allocation_uuid', 'handle_uuid', 'clean_result', 'user_id'])
        .select(['clean_method', 'clean_evidence_sha256', 'detail'])
        .orderBy('id')
        .execute()
    const health = async () =>
      db.db.selectFrom('devices').select(['health', 'health_reason']).executeTakeFirstOrThrow()
    try {
      const devices = [sampleDevice('h1', 0, { handles: 1, attachType: 'TEST_PCI' })]
      const report = () =>
        conductor.reportInventory({
          host: 'h1',
          hash: inventoryHash(devices),
          devices,
          autoActivate: true,
        })
      await report()
      await conductor.createDeviceProfile({
        name: 'gpu',
        description: null,
        groups: [{ 'resources:PGPU': '1' }],
      })
      const ask = { deviceProfileName: 'gpu', projectId: 'p1', maxArqs: 8 }
      const bindNew = async (n: number) => {
        const [arq] = await conductor.createArqs(ask)
        const [out] = await conductor.bindArqs({
          bindings: { [arq!.uuid]: { hostname: 'h1', instanceUuid: instance(n) } },
        })
        return { arq: arq!, out: out! }
      }

      // Held by a slow clean: the released unit is cleaning and no bind takes it.
      let release!: (r: CleanUnitResult) => void
      answer = () => new Promise((resolve) => (release = resolve))
      const first = await bindNew(1)
      assert.equal(first.out.state, 'Bound')
      await conductor.unbindArqs({ uuids: [first.arq.uuid] })
      const [held] = await handles()
      assert.equal(held!.clean_state, 'pending')
      assert.equal(Number(held!.in_use), 1)
      assert.equal((await bindNew(2)).out.state, 'BindFailed', 'no unit while cleaning')
      const [cap] = await listCapacityDeployables(db.db)
      assert.equal(cap!.cleaning, 1)
      assert.equal(cap!.used, 0)
      while (asked.length === 0) await new Promise((r) => setTimeout(r, 5))
      assert.deepEqual(asked[0], {
        handle: {
          type: 'TEST_PCI',
          info: { domain: '0000', bus: '10', device: '00', function: '0' },
        },
        ticket: held!.clean_allocation_uuid,
      })

      // The agent's answer: back in service, the clean recorded after its interval, the event.
      release(OK)
      await settled()
      const [free] = await handles()
      assert.deepEqual([free!.clean_state, Number(free!.in_use)], [null, 0])
      const [allocation, clean] = await records()
      assert.equal(allocation!.kind, 'allocation')
      assert.equal(allocation!.uuid, held!.clean_allocation_uuid)
      assert.deepEqual(
        [clean!.kind, clean!.allocation_uuid, clean!.clean_result, clean!.clean_method],
        ['clean', allocation!.uuid, 'ok', 'fake'],
      )
      assert.equal(clean!.clean_evidence_sha256, 'a'.repeat(64))
      const cleaned = events.find((e) => e.eventType === 'accelerator.device.cleaned')
      assert.equal(cleaned?.payload['cyborg_object.name'], 'DeviceCleanPayload')

      // A failed clean: the unit stays out, the device is fenced, a healthy report keeps it so.
      answer = async () => {
        throw new DriverError('fake: clean_outcome = fail', { code: 'CLEAN_FAILED' })
      }
      const second = await bindNew(3)
      assert.equal(second.out.state, 'Bound')
      await conductor.deleteArqs({ uuids: [second.arq.uuid] })
      await settled()
      assert.equal((await handles())[0]!.clean_state, 'failed')
      assert.deepEqual(await health(), {
        health: 'failed',
        health_reason: 'clean failed: fake: clean_outcome = fail',
      })
      devices[0]!.model = 'A100-v2' // a changed report, diffed in full
      await report()
      assert.equal((await health()).health, 'failed', 'reports do not lift a failed clean')
      const failedEvent = events.find((e) => e.eventType === 'accelerator.device.clean_failed')
      assert.equal(failedEvent?.priority, 'ERROR')
      assert.equal((await records()).at(-1)!.clean_result, 'failed')

      // The operator re-cleans by hand: the agent answers, the device is offered again.
      answer = async () => OK
      const deviceUuid = (
        await db.db.selectFrom('devices').select('uuid').executeTakeFirstOrThrow()
      ).uuid
      const again = await conductor.cleanDevice({ uuid: deviceUuid })
      assert.equal(again.units.length, 1)
      await settled()
      assert.equal((await handles())[0]!.clean_state, null)
      assert.deepEqual(await health(), { health: 'ok', health_reason: null })
      const hashes = await db.db.selectFrom('services').select('report_hash').execute()
      assert.ok(
        hashes.length > 0 && hashes.every((h) => h.report_hash === null),
        "the host's next report is diffed in full: the driver's own health applies again",
      )

      // A silent agent: the unit stays cleaning; the sweep asks again only after the interval.
      answer = async () => {
        throw new UnavailableError('no answer', { code: 'RPC_TIMEOUT' })
      }
      const third = await bindNew(4)
      await conductor.unbindArqs({ uuids: [third.arq.uuid] })
      await settled()
      assert.equal((await handles())[0]!.clean_state, 'pending')
      const before = asked.length
      assert.equal(await conductor.sweepCleaning(), 0, 'asked less than a retry interval ago')
      now = new Date(now.getTime() + 61_000)
      answer = async () => OK
      assert.equal(await conductor.sweepCleaning(), 1)
      await settled()
      assert.equal(asked.length, before + 1)
      assert.equal((await handles())[0]!.clean_state, null)

      // --force-in-service while the clean runs: an agent that does not answer the abort, or
      // is too old to stop a clean, leaves the unit out of service, and the error names the host.
      answer = () => new Promise((resolve) => (release = resolve)) // answers only at the end
      const fourth = await bindNew(5)
      await conductor.unbindArqs({ uuids: [fourth.arq.uuid] })
      abortAnswer = async () => {
        throw new UnavailableError('no reply to cyborg.agent.h1.abortClean within 15000 ms', {
          code: 'RPC_TIMEOUT',
        })
      }
      const force = { uuid: deviceUuid, force: true, userId: 'admin-1' }
      await assert.rejects(conductor.cleanDevice(force), (err: Error & { code?: string }) => {
        assert.equal(err.code, 'CLEAN_ABORT_UNCONFIRMED')
        assert.match(
          err.message,
          RegExp(
            /^the agent on host h1 did not confirm that no clean runs on unit\(s\) \S+ \(no reply .*\): /
              .source +
              /they stay out of service; start the agent on h1 and run the command again$/.source,
          ),
        )
        return true
      })
      abortAnswer = async () => {
        throw new NotFoundError('no RPC method cyborg.agent.h1.abortClean', {
          code: 'RPC_NO_METHOD',
        })
      }
      await assert.rejects(conductor.cleanDevice(force), {
        code: 'CLEAN_ABORT_UNSUPPORTED',
        message: /^the agent on host h1 cannot stop a clean \(it is older than agent RPC 1\.7\)/,
      })
      assert.equal((await handles())[0]!.clean_state, 'pending', 'still out of service')
      assert.equal((await bindNew(50)).out.state, 'BindFailed', 'no bind takes it')

      // The agent stops its clean and answers: the unit goes back, the override records the abort.
      abortAnswer = async () => ({ aborted: true })
      const forced = await conductor.cleanDevice(force)
      assert.deepEqual(aborts.at(-1), asked.at(-1), 'the abort names the unit and its release')
      assert.deepEqual(forced.forced, true)
      assert.equal(forced.units.length, 1)
      assert.equal((await handles())[0]!.clean_state, null)
      await conductor.drainCustody()
      const override = (await records()).at(-1)!
      assert.deepEqual(
        [override.kind, override.clean_result, override.user_id],
        ['override', 'override', 'admin-1'],
      )
      assert.deepEqual(JSON.parse(override.detail!), {
        reason: 'force-in-service',
        by_project_id: null,
        clean_aborted: true,
      })
      assert.equal((await bindNew(6)).out.state, 'Bound', 'back in service')
      assert.deepEqual(await listCleaningUnits(db.db), [])
      // Every closed interval has a clean result or an override.
      const all = await records()
      for (const a of all.filter((r) => r.kind === 'allocation'))
        assert.ok(
          all.some(
            (r) =>
              r.allocation_uuid === a.uuid && (r.clean_result === 'ok' || r.kind === 'override'),
          ),
          `interval ${a.uuid} has no clean`,
        )
      release(OK) // the ask left waiting: settles nothing (the unit was forced back)
      await conductor.cleaningIdle()
    } finally {
      await conductor.stop()
      await db.close()
    }
  })
}
