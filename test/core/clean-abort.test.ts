/**
 * `cyborg device clean --force-in-service` while a clean runs (issue 27; docs/cleaning.md), through
 * a core with the fake driver's agent (a slow clean: `clean_delay_ms`) over the in-process bus, on
 * every database: the force stops the agent's clean before the unit goes back, so that the unit
 * bound at once to a new instance is never cleaned under it; a late ask for the aborted release
 * cleans nothing; the ledger's override says that a clean was stopped.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import type { MessageBus } from '../../src/bus/bus.js'
import type { Logger } from '../../src/domain/logger.js'
import { startCore, type Core } from '../../src/main/core.js'
import type { NovaClient } from '../../src/openstack/nova.js'
import { createAgentClient } from '../../src/rpc/agent-rpc.js'
import { testDialects, type TestDatabase } from '../support/db.js'

const INSTANCE = (n: number) => `c1ea0b07-0000-4000-8000-${String(n).padStart(12, '0')}`
const nova = {
  sendArqBoundEvents: () => Promise.resolve({ ok: true, results: [] }),
} as unknown as NovaClient

/** Keeps every line's message and fields: the agent logs `unit cleaned` when a clean ends. */
function recordingLogger(lines: { msg: string; obj: Record<string, unknown> }[]): Logger {
  const at =
    () =>
    (obj: unknown, msg?: unknown): void =>
      void lines.push(
        typeof obj === 'string'
          ? { msg: obj, obj: {} }
          : { msg: String(msg ?? ''), obj: obj as Record<string, unknown> },
      )
  const log: Logger = { error: at(), warn: at(), info: at(), debug: () => {}, child: () => log }
  return log
}

for (const dialect of await testDialects()) {
  void describe(
    `force-in-service during a clean on ${dialect.name}`,
    { skip: dialect.skip },
    () => {
      let db: TestDatabase
      let bus: MessageBus
      let core: Core
      const lines: { msg: string; obj: Record<string, unknown> }[] = []

      before(async () => {
        db = await dialect.create()
        bus = createInProcessBus()
        core = await startCore({
          db,
          bus,
          log: recordingLogger(lines),
          nova,
          conductor: { reapIntervalMs: 0 },
          agent: {
            host: 'node1',
            enabledDrivers: ['fake'],
            autoActivate: true,
            periodicIntervalMs: 3_600_000,
            driverOptions: { fake: { clean_delay_ms: '3000' } },
          },
        })
        await core.agent!.discoverNow()
        await core.conductorClient.createDeviceProfile({
          name: 'one',
          description: null,
          groups: [{ 'resources:FPGA': '1' }],
        })
      })
      after(async () => {
        await core?.stop()
        await bus?.close()
        await db?.close()
      })

      const bind = async (n: number) => {
        const c = core.conductorClient
        const [arq] = await c.createArqs({ deviceProfileName: 'one', projectId: 'p1', maxArqs: 8 })
        const [out] = await c.bindArqs({
          bindings: { [arq!.uuid]: { hostname: 'node1', instanceUuid: INSTANCE(n) } },
        })
        assert.equal(out!.state, 'Bound')
        return db.db
          .selectFrom('accelerator_requests')
          .select(['uuid', 'attach_handle_id'])
          .where('uuid', '=', arq!.uuid)
          .executeTakeFirstOrThrow()
      }
      const handle = (id: number) =>
        db.db
          .selectFrom('attach_handles as h')
          .innerJoin('deployables as d', 'd.id', 'h.deployable_id')
          .innerJoin('devices as dev', 'dev.id', 'd.device_id')
          .select(['h.uuid', 'h.attach_type', 'h.attach_info', 'h.clean_state'])
          .select(['h.clean_allocation_uuid', 'dev.uuid as device'])
          .where('h.id', '=', id)
          .executeTakeFirstOrThrow()

      it('stops the clean before the unit goes back: the next tenant is never cleaned', async () => {
        const first = await bind(1)
        await core.conductorClient.unbindArqs({ uuids: [first.uuid] })
        const cleaning = await handle(first.attach_handle_id!)
        assert.equal(cleaning.clean_state, 'pending')
        // The agent's clean has begun (the ask is on the in-process bus at once; it takes 3 s).
        await new Promise((r) => setTimeout(r, 200))

        const forced = await core.conductorClient.cleanDevice({
          uuid: cleaning.device,
          force: true,
          userId: 'admin-1',
          projectId: 'p-admin',
        })
        assert.deepEqual(forced.units, [cleaning.uuid])
        const forcedAt = lines.length
        const second = await bind(2)
        assert.equal(second.attach_handle_id, first.attach_handle_id, 'the forced unit, rebound')

        // The conductor's ask for the old release ends (it was aborted); no clean ended after the force.
        await core.conductor!.cleaningIdle()
        const cleanedSince = lines.slice(forcedAt).filter((l) => l.msg === 'unit cleaned')
        assert.deepEqual(cleanedSince, [], 'no clean ran on the unit once it was forced back')
        const ask = {
          handle: {
            type: cleaning.attach_type,
            info: JSON.parse(cleaning.attach_info) as Record<string, string>,
          },
          ticket: cleaning.clean_allocation_uuid!,
        }
        const agent = createAgentClient(bus, 'node1', { timeoutMs: 10_000 })
        assert.deepEqual(await agent.abortClean(ask), { aborted: false }, 'no clean runs')
        // A late ask for the aborted release (crossing the force on the bus) cleans nothing.
        await assert.rejects(agent.cleanUnit(ask), { code: 'CLEAN_ABORTED' })
        const now = await handle(second.attach_handle_id!)
        assert.equal(now.clean_state, null)

        await core.conductor!.drainCustody()
        const [override] = await db.db
          .selectFrom('custody_records')
          .select(['kind', 'user_id', 'allocation_uuid', 'detail'])
          .where('kind', '=', 'override')
          .execute()
        assert.deepEqual(override, {
          kind: 'override',
          user_id: 'admin-1',
          allocation_uuid: cleaning.clean_allocation_uuid,
          detail: JSON.stringify({
            reason: 'force-in-service',
            by_project_id: 'p-admin',
            clean_aborted: true,
          }),
        })
      })
    },
  )
}
