/**
 * The boot-storm race, through the conductor: two conductors on one database, 50 concurrent
 * binders, 1,000 accelerator requests, 100 handles. Exactly 100 bind, the rest fail cleanly, and
 * no handle is ever held twice.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createConductor, type Conductor } from '../../src/conductor/conductor.js'
import { openDatabase, type DatabaseHandle } from '../../src/db/core/connection.js'
import { testDialects, type TestDatabase } from '../support/db.js'
import { noopLogger } from '../../src/domain/logger.js'
import { inventoryHash } from '../../src/rpc/inventory-hash.js'
import { STORM_HOST as HOST, stormDevices } from '../support/storm-inventory.js'

const clock = { now: () => new Date() }

for (const dialect of await testDialects()) {
  void describe(
    `ARQ bind race, two conductors on ${dialect.name}`,
    { skip: dialect.skip, timeout: 120_000 },
    () => {
      let db: TestDatabase
      let second: DatabaseHandle
      let conductors: Conductor[]

      before(async () => {
        db = await dialect.create()
        second = dialect.name === 'sqlite' ? db : await openDatabase(db.url, { poolSize: 8 })
        conductors = [db, second].map((h) =>
          createConductor(
            { db: h, log: noopLogger, clock },
            { saveIntervalMs: 1, reapIntervalMs: 0 },
          ),
        )
        const list = stormDevices(10, 10) // 100 TEST_PCI handles, no agent preparation needed
        await conductors[0]!.reportInventory({
          host: HOST,
          hash: inventoryHash(list),
          devices: list,
          autoActivate: true,
        })
        await conductors[0]!.createDeviceProfile({
          name: 'one',
          description: null,
          groups: [{ 'resources:FPGA': '1' }],
        })
      })
      after(async () => {
        for (const c of conductors ?? []) await c.stop()
        if (second !== db) await second?.close()
        await db?.close()
      })

      void it('concurrent binds of one instance through two conductors: exactly one wins', async () => {
        const instance = '5707a000-0000-4000-8000-0000000000aa'
        const arqs = (
          await Promise.all(
            Array.from({ length: 4 }, () =>
              conductors[0]!.createArqs({ deviceProfileName: 'one', projectId: null, maxArqs: 64 }),
            ),
          )
        ).flat()
        // Each of 4 requests is bound to the same instance 5 times over, all at once, on both conductors.
        const attempts = Array.from({ length: 20 }, (_, i) =>
          conductors[i % 2]!.bindArqs({
            bindings: { [arqs[i % 4]!.uuid]: { hostname: HOST, instanceUuid: instance } },
          }),
        )
        const settled = await Promise.allSettled(attempts)
        const won = settled.filter((s) => s.status === 'fulfilled')
        assert.equal(won.length, 1, 'exactly one bind of the instance goes through')
        for (const s of settled) {
          if (s.status === 'rejected')
            assert.ok(
              ['INSTANCE_ALREADY_BOUND', 'ARQ_BAD_STATE'].includes(s.reason.code),
              String(s.reason),
            )
        }
        assert.ok(
          settled.some(
            (s) => s.status === 'rejected' && s.reason.code === 'INSTANCE_ALREADY_BOUND',
          ),
        )
        const held = await db.db
          .selectFrom('accelerator_requests')
          .select('uuid')
          .where('instance_uuid', '=', instance)
          .execute()
        assert.equal(held.length, 1, 'one request names the instance')
        await conductors[1]!.deleteArqs({ uuids: arqs.map((a) => a.uuid) })
      })

      void it('a delete racing a bind of the same request leaks no handle', async () => {
        const arqs = (
          await Promise.all(
            Array.from({ length: 40 }, () =>
              conductors[0]!.createArqs({ deviceProfileName: 'one', projectId: null, maxArqs: 64 }),
            ),
          )
        ).flat()
        // Each request is bound through one conductor and deleted through the other, at the same time.
        await Promise.allSettled(
          arqs.flatMap((arq, i) => [
            conductors[i % 2]!.bindArqs({
              bindings: {
                [arq.uuid]: {
                  hostname: HOST,
                  instanceUuid: `5707b000-0000-4000-8000-${String(i).padStart(12, '0')}`,
                },
              },
            }),
            conductors[(i + 1) % 2]!.deleteArqs({ uuids: [arq.uuid] }),
          ]),
        )
        // A request that survived (bound after its delete read it) goes now; then no handle is held.
        await conductors[0]!.deleteArqs({ uuids: arqs.map((a) => a.uuid) }).catch(() => null)
        const left = await db.db
          .selectFrom('accelerator_requests')
          .select('uuid')
          .where(
            'uuid',
            'in',
            arqs.map((a) => a.uuid),
          )
          .execute()
        assert.deepEqual(left, [])
        const inUse = await db.db
          .selectFrom('attach_handles')
          .select('id')
          .where('in_use', '=', 1)
          .execute()
        assert.deepEqual(inUse, [], 'no handle held without a request')
      })

      void it('an unbind racing a bind of the same request leaks no handle', async () => {
        const arqs = (
          await Promise.all(
            Array.from({ length: 40 }, () =>
              conductors[0]!.createArqs({ deviceProfileName: 'one', projectId: null, maxArqs: 64 }),
            ),
          )
        ).flat()
        await Promise.allSettled(
          arqs.flatMap((arq, i) => [
            conductors[i % 2]!.bindArqs({
              bindings: {
                [arq.uuid]: {
                  hostname: HOST,
                  instanceUuid: `5707c000-0000-4000-8000-${String(i).padStart(12, '0')}`,
                },
              },
            }),
            conductors[(i + 1) % 2]!.unbindArqs({ uuids: [arq.uuid] }),
          ]),
        )
        // Every handle in use is named by exactly the request that holds it.
        const named = await db.db
          .selectFrom('accelerator_requests')
          .select('attach_handle_id')
          .where('attach_handle_id', 'is not', null)
          .execute()
        const inUse = await db.db
          .selectFrom('attach_handles')
          .select('id')
          .where('in_use', '=', 1)
          .execute()
        assert.deepEqual(
          new Set(inUse.map((h) => h.id)),
          new Set(named.map((r) => r.attach_handle_id)),
        )
        await conductors[0]!.deleteArqs({ uuids: arqs.map((a) => a.uuid) })
        assert.deepEqual(
          await db.db.selectFrom('attach_handles').select('id').where('in_use', '=', 1).execute(),
          [],
        )
      })

      void it('1,000 requests, 100 handles, 50 binders: exactly 100 bound, no handle held twice', async () => {
        // The profile asks for one unit: each create makes one ARQ, 8 at a time, on both conductors.
        const arqs: { uuid: string }[] = []
        while (arqs.length < 1000) {
          const created = await Promise.all(
            Array.from({ length: 8 }, (_, i) =>
              conductors[i % 2]!.createArqs({
                deviceProfileName: 'one',
                projectId: null,
                maxArqs: 64,
              }),
            ),
          )
          arqs.push(...created.flat())
        }
        let next = 0
        const outcomes: string[] = []
        const binder = async (b: number) => {
          while (next < arqs.length) {
            const arq = arqs[next++]!
            const [out] = await conductors[b % 2]!.bindArqs({
              bindings: {
                [arq.uuid]: {
                  hostname: HOST,
                  instanceUuid: `5707a000-0000-4000-8000-${String(next).padStart(12, '0')}`,
                },
              },
            })
            outcomes.push(out!.state)
          }
        }
        await Promise.all(Array.from({ length: 50 }, (_, b) => binder(b)))
        assert.equal(outcomes.length, arqs.length)
        assert.equal(outcomes.filter((s) => s === 'Bound').length, 100)
        assert.equal(outcomes.filter((s) => s === 'BindFailed').length, arqs.length - 100)
        // The invariant, from the database: 100 handles in use, each named by exactly one Bound ARQ.
        const bound = await db.db
          .selectFrom('accelerator_requests')
          .select('attach_handle_id')
          .where('state', '=', 'Bound')
          .execute()
        assert.equal(new Set(bound.map((r) => r.attach_handle_id)).size, 100)
        const inUse = await db.db
          .selectFrom('attach_handles')
          .select('id')
          .where('in_use', '=', 1)
          .execute()
        assert.deepEqual(
          new Set(inUse.map((h) => h.id)),
          new Set(bound.map((r) => r.attach_handle_id)),
        )
        const stuck = await db.db
          .selectFrom('accelerator_requests')
          .select('uuid')
          .where('state', 'in', ['Initial', 'BindStarted'])
          .execute()
        assert.deepEqual(stuck, [])
      })
    },
  )
}
