/**
 * A bind delivered twice (issue 30; docs/arqs.md, "Redelivered binds"), through the conductor on
 * SQLite, PostgreSQL and MariaDB: the second delivery of a bind, its key the same, is answered as
 * the first run left its requests, changing nothing (same handle, one event, Nova told once); the
 * same binding under another key, or none, is refused as before; a request bound by the key and
 * moved by a later bind refuses the stale delivery. A create delivered twice under its key makes
 * its requests once. A delete by uuid delivered twice under its key answers as its first run (the
 * requests it deleted are deleted, not 404), and a uuid that run did not find stays a 404 naming it.
 * Nova's side is stubbed (it cannot run here).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createConductor, type Conductor } from '../conductor.js'
import { ConflictError, NotFoundError } from '../../domain/errors.js'
import { newUuid } from '../../domain/ids.js'
import { noopLogger } from '../../domain/logger.js'
import type { ArqBoundEvent, NovaClient } from '../../openstack/nova.js'
import { testDialects, type TestDatabase } from '../../../test/support/db.js'
import { seedStorm, STORM_HOST, STORM_PROFILE } from '../../../test/support/storm-inventory.js'

const INSTANCE = (n: number) => `4ede1170-0000-4000-8000-${String(n).padStart(12, '0')}`
const refused = (err: unknown) => err instanceof ConflictError && err.code === 'ARQ_BAD_STATE'

for (const dialect of await testDialects()) {
  void describe(
    `a redelivered bind, create or delete on ${dialect.name}`,
    { skip: dialect.skip },
    () => {
      let db: TestDatabase
      let conductor: Conductor
      const told: ArqBoundEvent[][] = []
      const nova = {
        sendArqBoundEvents: (events: ArqBoundEvent[]) => {
          told.push(events)
          return Promise.resolve({ ok: true, results: [] })
        },
      } as unknown as NovaClient

      before(async () => {
        db = await dialect.create()
        conductor = createConductor(
          { db, log: noopLogger, clock: { now: () => new Date() }, nova },
          { saveIntervalMs: 0, reapIntervalMs: 0 },
        )
        await seedStorm(conductor, 1, 8)
      })
      after(async () => {
        await conductor?.stop()
        await db?.close()
      })

      const create = async (n: number) =>
        (
          await Promise.all(
            Array.from({ length: n }, () =>
              conductor.createArqs({
                deviceProfileName: STORM_PROFILE,
                projectId: 'p1',
                maxArqs: 8,
              }),
            ),
          )
        ).flat()
      const rows = (uuids: string[]) =>
        db.db
          .selectFrom('accelerator_requests')
          .select(['uuid', 'state', 'attach_handle_id', 'updated_at', 'bound_at', 'bind_id'])
          .where('uuid', 'in', uuids)
          .orderBy('uuid')
          .execute()
      const events = (uuids: string[]) =>
        db.db
          .selectFrom('events')
          .select(['resource_uuid', 'event_type'])
          .where('resource_uuid', 'in', uuids)
          .where('event_type', 'in', ['accelerator.arq.bound', 'accelerator.arq.bind_failed'])
          .orderBy('id')
          .execute()

      void it('the same bind again (same key) answers as the first; another key or none is refused', async () => {
        const arqs = await create(2)
        const uuids = arqs.map((a) => a.uuid)
        const bindings = Object.fromEntries(
          uuids.map((u) => [u, { hostname: STORM_HOST, instanceUuid: INSTANCE(1) }]),
        )
        const bindId = newUuid()
        told.length = 0
        const first = await conductor.bindArqs({ bindings, bindId })
        assert.deepEqual(
          first.map((o) => o.state),
          ['Bound', 'Bound'],
        )
        const bound = await rows(uuids)
        assert.ok(bound.every((r) => r.bind_id === bindId && r.attach_handle_id !== null))
        const second = await conductor.bindArqs({ bindings, bindId: bindId.toUpperCase() })
        assert.deepEqual(second, first)
        assert.deepEqual(await rows(uuids), bound, 'nothing changed: same handles, same times')
        assert.deepEqual(
          (await events(uuids)).map((e) => e.event_type),
          ['accelerator.arq.bound', 'accelerator.arq.bound'],
          'one bound event per request',
        )
        assert.equal(told.length, 1, 'Nova told once')
        assert.equal(told[0]!.length, 2)
        await assert.rejects(conductor.bindArqs({ bindings, bindId: newUuid() }), refused)
        await assert.rejects(conductor.bindArqs({ bindings }), refused)
        assert.deepEqual(await rows(uuids), bound)
        assert.equal(told.length, 1)
      })

      void it('a bind that failed answers BindFailed again, with a reason and no second event', async () => {
        const [arq] = await create(1)
        const bindings = { [arq!.uuid]: { hostname: 'no-such-host', instanceUuid: INSTANCE(2) } }
        const bindId = newUuid()
        const [first] = await conductor.bindArqs({ bindings, bindId })
        assert.equal(first!.state, 'BindFailed')
        const [again] = await conductor.bindArqs({ bindings, bindId })
        assert.equal(again!.state, 'BindFailed')
        assert.match(again!.reason!, /first delivery of this bind/)
        assert.deepEqual(
          (await events([arq!.uuid])).map((e) => e.event_type),
          ['accelerator.arq.bind_failed'],
        )
      })

      void it('after an unbind: a late delivery changes nothing, a new bind works, then the old key is refused', async () => {
        const [arq] = await create(1)
        const uuid = arq!.uuid
        const bindings = { [uuid]: { hostname: STORM_HOST, instanceUuid: INSTANCE(3) } }
        const old = newUuid()
        await conductor.bindArqs({ bindings, bindId: old })
        await conductor.unbindArqs({ uuids: [uuid] })
        const unbound = await rows([uuid])
        assert.equal(unbound[0]!.state, 'Unbound')
        assert.deepEqual(await conductor.bindArqs({ bindings, bindId: old }), [
          { uuid, state: 'Unbound' },
        ])
        assert.deepEqual(await rows([uuid]), unbound, 'not bound again behind the caller')
        const renewed = newUuid()
        assert.deepEqual(await conductor.bindArqs({ bindings, bindId: renewed }), [
          { uuid, state: 'Bound' },
        ])
        assert.equal((await rows([uuid]))[0]!.bind_id, renewed)
        await assert.rejects(conductor.bindArqs({ bindings, bindId: old }), refused)
      })

      void it('a key that only some of the requests carry is refused, nothing bound', async () => {
        const [a, b] = await create(2)
        const key = newUuid()
        const instance = INSTANCE(4)
        await conductor.bindArqs({
          bindings: { [a!.uuid]: { hostname: STORM_HOST, instanceUuid: instance } },
          bindId: key,
        })
        const both = Object.fromEntries(
          [a!, b!].map((x) => [x.uuid, { hostname: STORM_HOST, instanceUuid: instance }]),
        )
        await assert.rejects(conductor.bindArqs({ bindings: both, bindId: key }), refused)
        assert.equal((await rows([b!.uuid]))[0]!.state, 'Initial')
      })

      void it('a create delivered again (same key) answers with the requests it made; another key makes more', async () => {
        const ask = { deviceProfileName: STORM_PROFILE, projectId: 'p1', maxArqs: 8 }
        const count = async () =>
          Number(
            (
              await db.db
                .selectFrom('accelerator_requests')
                .select((eb) => eb.fn.countAll().as('n'))
                .executeTakeFirstOrThrow()
            ).n,
          )
        const createId = newUuid()
        const first = await conductor.createArqs({ ...ask, createId })
        const before = await count()
        assert.deepEqual(await conductor.createArqs({ ...ask, createId }), first)
        assert.equal(await count(), before, 'no second set')
        const created = await db.db
          .selectFrom('events')
          .select('id')
          .where('resource_uuid', '=', first[0]!.uuid)
          .where('event_type', '=', 'accelerator.arq.created')
          .execute()
        assert.equal(created.length, 1, 'one created event')
        const other = await conductor.createArqs({ ...ask, createId: newUuid() })
        assert.notEqual(other[0]!.uuid, first[0]!.uuid)
        assert.equal(await count(), before + 1)
      })

      /** A NotFoundError naming exactly `uuids`. */
      const notFound = (uuids: string[]) => (err: unknown) =>
        err instanceof NotFoundError &&
        err.code === 'ARQ_NOT_FOUND' &&
        JSON.stringify(err.details?.uuids) === JSON.stringify(uuids) &&
        uuids.every((u) => err.message.includes(u))

      void it('a delete delivered again (same key) answers as the first; another key, or none, 404s', async () => {
        const [idle, bound] = await create(2)
        const uuids = [idle!.uuid, bound!.uuid]
        await conductor.bindArqs({
          bindings: { [bound!.uuid]: { hostname: STORM_HOST, instanceUuid: INSTANCE(5) } },
        })
        const deleteId = newUuid()
        const first = await conductor.deleteArqs({ uuids, deleteId })
        assert.deepEqual([...first.deleted].sort(), [...uuids].sort())
        assert.deepEqual(await rows(uuids), [], 'both deleted')
        const again = await conductor.deleteArqs({ uuids, deleteId: deleteId.toUpperCase() })
        assert.deepEqual([...again.deleted].sort(), [...uuids].sort(), 'answered as the first run')
        const deleted = await db.db
          .selectFrom('events')
          .select('resource_uuid')
          .where('resource_uuid', 'in', uuids)
          .where('event_type', '=', 'accelerator.arq.deleted')
          .execute()
        assert.equal(deleted.length, 2, 'one deleted event per request')
        await assert.rejects(conductor.deleteArqs({ uuids, deleteId: newUuid() }), notFound(uuids))
        await assert.rejects(conductor.deleteArqs({ uuids }), notFound(uuids))
      })

      void it('a delete whose first run found an unknown uuid answers the same 404 again, naming only it', async () => {
        const [arq] = await create(1)
        const unknown = '0dd00000-0000-4000-8000-000000000000'
        const ask = { uuids: [arq!.uuid, unknown], deleteId: newUuid() }
        await assert.rejects(conductor.deleteArqs(ask), notFound([unknown]))
        assert.deepEqual(await rows([arq!.uuid]), [], 'the known one deleted')
        await assert.rejects(conductor.deleteArqs(ask), notFound([unknown]))
      })
    },
  )
}
