/**
 * Batched cleans (issue 28; docs/cleaning.md, "Batched asks"), on every database, through an
 * in-process conductor whose agents are served over the in-process bus: units released together
 * go to their agent in one `cleanUnits` message (AgentRpc 1.8) and their answers are settled in one
 * write; a unit whose entry is a failure is failed and fenced alone while the others go back in
 * service; an agent older than 1.8 gets `cleanUnit` per unit, and no unit is offered before its
 * own answer. An operator's force-in-service settles its units in one write too.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { testDialects } from '../../../test/support/db.js'
import { sampleDevice } from '../../../test/support/sample-inventory.js'
import { createInProcessBus } from '../../bus/in-process-bus.js'
import { DriverError } from '../../domain/errors.js'
import { noopLogger } from '../../domain/logger.js'
import { createAgentClient, agentTopic } from '../../rpc/agent-rpc.js'
import type { CleanUnitRequest, CleanUnitResult } from '../../rpc/agent-rpc.js'
import { inventoryHash } from '../../rpc/inventory-hash.js'
import { toCleanUnitsEntry } from '../../rpc/clean-units.js'
import { serveRpc } from '../../rpc/rpc.js'
import { createConductor } from '../conductor.js'

const instance = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`
const OK: CleanUnitResult = {
  driver: 'fake',
  policy: 'auto',
  method: 'fake',
  evidenceSha256: 'b'.repeat(64),
  durationMs: 0,
}
const UNITS = 4

for (const dialect of await testDialects()) {
  await test(`batched cleans on ${dialect.name}`, { skip: dialect.skip }, async (t) => {
    const db = await dialect.create()
    const bus = createInProcessBus()
    /** Every message an agent got: its host, method and units. */
    const sent: { host: string; method: string; units: number }[] = []
    /** The unit (by PCI function) whose clean fails; the answer is held until `go` is called. */
    let failing = ''
    let go!: () => void
    let gate = Promise.resolve()
    const hold = () => {
      gate = new Promise((r) => (go = r))
    }
    const cleanOne = async (req: CleanUnitRequest) => {
      await gate
      if (req.handle.info.function === failing)
        throw new DriverError('fake: clean_outcome = fail', { code: 'CLEAN_FAILED' })
      return OK
    }
    // h-new speaks 1.8; h-old is an agent of 1.7, without cleanUnits (RPC_NO_METHOD).
    const servers = [
      await serveRpc(bus, agentTopic('h-new'), '1.8', {
        cleanUnit: async (req: CleanUnitRequest) => {
          sent.push({ host: 'h-new', method: 'cleanUnit', units: 1 })
          return cleanOne(req)
        },
        cleanUnits: async (req: { units: CleanUnitRequest[] }) => {
          sent.push({ host: 'h-new', method: 'cleanUnits', units: req.units.length })
          const settled = await Promise.allSettled(req.units.map(cleanOne))
          return { results: settled.map(toCleanUnitsEntry) }
        },
        abortClean: async () => ({ aborted: false }),
      }),
      await serveRpc(bus, agentTopic('h-old'), '1.7', {
        cleanUnit: async (req: CleanUnitRequest) => {
          sent.push({ host: 'h-old', method: 'cleanUnit', units: 1 })
          return cleanOne(req)
        },
        abortClean: async () => ({ aborted: false }),
      }),
    ]
    const conductor = createConductor(
      {
        db,
        log: noopLogger,
        clock: { now: () => new Date() },
        agentFor: ((host: string) => createAgentClient(bus, host)) as never,
      },
      {
        saveIntervalMs: 0,
        reapIntervalMs: 0,
        heartbeats: false,
        // A wide window: the test's releases go in one batch however loaded the machine is.
        cleaning: { retryIntervalMs: 60_000, sweepIntervalMs: 0, asks: { windowMs: 100 } },
      },
    )
    const handles = (host: string) =>
      db.db
        .selectFrom('attach_handles as h')
        .innerJoin('deployables as d', 'd.id', 'h.deployable_id')
        .innerJoin('devices as dev', 'dev.id', 'd.device_id')
        .select(['h.attach_info', 'h.in_use', 'h.clean_state'])
        .where('dev.hostname', '=', host)
        .orderBy('h.id')
        .execute()
    /** Binds every unit of `host` to one instance and releases them all at once. */
    let n = 0
    const bindAndRelease = async (host: string) => {
      const arqs = await conductor.createArqs({
        deviceProfileName: `p-${host}`,
        projectId: 'p1',
        maxArqs: 64,
      })
      const instanceUuid = instance(++n)
      const bindings = Object.fromEntries(
        arqs.map((a) => [a.uuid, { hostname: host, instanceUuid }]),
      )
      const out = await conductor.bindArqs({ bindings })
      assert.ok(
        out.every((o) => o.state === 'Bound'),
        JSON.stringify(out),
      )
      // Nova deleting the instance's requests: one release of all its units.
      await conductor.deleteArqs({ instanceUuid })
    }
    try {
      for (const host of ['h-new', 'h-old']) {
        const devices = [sampleDevice(host, 0, { handles: UNITS, attachType: 'TEST_PCI' })]
        await conductor.reportInventory({
          host,
          hash: inventoryHash(devices),
          devices,
          autoActivate: true,
        })
        await conductor.createDeviceProfile({
          name: `p-${host}`,
          description: null,
          groups: [{ 'resources:PGPU': String(UNITS) }],
        })
      }
      const second = JSON.parse((await handles('h-new'))[1]!.attach_info) as { function: string }

      await t.test('one message and one write for units released together', async () => {
        failing = second.function
        hold()
        await bindAndRelease('h-new')
        while (sent.length === 0) await new Promise((r) => setTimeout(r, 2))
        const before = conductor.stats()
        // Nothing is offered before its answer.
        assert.ok((await handles('h-new')).every((h) => Number(h.in_use) === 1))
        go()
        await conductor.cleaningIdle()
        const after = conductor.stats()
        assert.deepEqual(sent, [{ host: 'h-new', method: 'cleanUnits', units: UNITS }])
        assert.equal(after.cleaning!.settleWrites - before.cleaning!.settleWrites, 1)
        assert.equal(after.cleaning!.settled - before.cleaning!.settled, UNITS)
        assert.equal(after.ops - before.ops, 1, 'one committer write settles every answer')
        // The failed entry fails its unit alone; the others are back in service.
        const rows = await handles('h-new')
        assert.deepEqual(
          rows.map((h) => [h.clean_state, Number(h.in_use)]),
          [[null, 0], ['failed', 1], ...Array(UNITS - 2).fill([null, 0])],
        )
        const records = await db.db
          .selectFrom('custody_records')
          .select(['clean_result'])
          .where('kind', '=', 'clean')
          .where('hostname', '=', 'h-new')
          .execute()
        assert.deepEqual(records.map((r) => r.clean_result).sort(), [
          'failed',
          ...Array(UNITS - 1).fill('ok'),
        ])
      })

      await t.test('an agent older than 1.8 gets cleanUnit per unit', async () => {
        failing = ''
        sent.length = 0
        hold()
        await bindAndRelease('h-old')
        while (sent.length < UNITS) await new Promise((r) => setTimeout(r, 2))
        assert.ok((await handles('h-old')).every((h) => Number(h.in_use) === 1))
        go()
        await conductor.cleaningIdle()
        assert.deepEqual(
          sent,
          Array(UNITS).fill({ host: 'h-old', method: 'cleanUnit', units: 1 }),
          'after its RPC_NO_METHOD, one cleanUnit per unit (the refused cleanUnits reached no method)',
        )
        assert.ok((await handles('h-old')).every((h) => Number(h.in_use) === 0))
        // The next release goes one by one at once: the host is known to be old.
        sent.length = 0
        await bindAndRelease('h-old')
        await conductor.cleaningIdle()
        assert.deepEqual(sent, Array(UNITS).fill({ host: 'h-old', method: 'cleanUnit', units: 1 }))
      })

      await t.test('force-in-service settles its units in one write', async () => {
        const before = conductor.stats()
        const device = await db.db
          .selectFrom('devices')
          .select('uuid')
          .where('hostname', '=', 'h-new')
          .executeTakeFirstOrThrow()
        const out = await conductor.cleanDevice({ uuid: device.uuid, force: true })
        assert.equal(out.units.length, 1, 'the failed unit')
        const after = conductor.stats()
        assert.equal(after.cleaning!.settleWrites - before.cleaning!.settleWrites, 1)
        assert.ok((await handles('h-new')).every((h) => Number(h.in_use) === 0))
      })
    } finally {
      await conductor.stop()
      for (const s of servers) await s.unsubscribe()
      await bus.close()
      await db.close()
    }
  })
}
