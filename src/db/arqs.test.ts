import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { Kysely } from 'kysely'
import { expandProfileGroups } from '../domain/arq.js'
import { ConflictError, NotFoundError } from '../domain/errors.js'
import { createArqs, deleteArqs, getArq, listArqs, updateArqStates } from './arqs.js'
import { openDatabase } from './core/connection.js'
import { createDeviceProfile } from './device-profiles.js'
import type { Database } from './core/schema.js'
import { testDialects, type TestDatabase } from '../../test/support/db.js'
import { claimAttachHandle, releaseAttachHandle } from './attach-handles.js'
import { claimInstanceLocks, deleteStaleInstanceLocks } from './arq-instances.js'

const T0 = '2024-01-01T00:00:00.000000+00:00'
const T1 = '2024-01-02T00:00:00.000000+00:00'
const INSTANCE = 'aaaaaaaa-0000-4000-8000-000000000001'
const RP = 'bbbbbbbb-0000-4000-8000-000000000001'

/** Deterministic uuids: prefix + counter. */
function uuids(prefix: string) {
  let n = 0
  return () => `${prefix}-0000-4000-8000-${String(++n).padStart(12, '0')}`
}

/** One device with one deployable holding `handles` free PCI handles; returns the deployable id. */
async function seedDeployable(db: Kysely<Database>, handles: number): Promise<number> {
  const cpid = JSON.stringify({ bus: '10', device: '00', domain: '0000', function: '0' })
  await db
    .insertInto('devices')
    .values({
      uuid: 'dddddddd-0000-4000-8000-000000000001',
      type: 'FPGA',
      vendor: '8086',
      model: 'A10',
      hostname: 'h',
      std_board_info: null,
      vendor_board_info: null,
      lifecycle_reason: null,
      cpid_type: 'PCI',
      cpid_info: cpid,
      created_at: T0,
      updated_at: null,
    })
    .execute()
  const dev = await db.selectFrom('devices').select('id').executeTakeFirstOrThrow()
  await db
    .insertInto('deployables')
    .values({
      uuid: 'eeeeeeee-0000-4000-8000-000000000001',
      device_id: dev.id,
      parent_id: null,
      root_id: null,
      name: 'h_dep',
      num_accelerators: handles,
      rp_uuid: RP,
      driver_name: 'fake',
      bitstream_id: null,
      created_at: T0,
      updated_at: null,
    })
    .execute()
  const dep = await db.selectFrom('deployables').select('id').executeTakeFirstOrThrow()
  const next = uuids('ffffffff')
  await db
    .insertInto('attach_handles')
    .values(
      Array.from({ length: handles }, (_, i) => ({
        uuid: next(),
        deployable_id: dep.id,
        attach_type: 'PCI',
        attach_info: JSON.stringify({
          bus: '10',
          device: '00',
          domain: '0000',
          function: String(i),
        }),
        created_at: T0,
        updated_at: null,
      })),
    )
    .execute()
  return dep.id
}

async function seedArqs(db: Kysely<Database>, groups: Record<string, string>[]) {
  const profile = await createDeviceProfile(
    db,
    { uuid: 'cccccccc-0000-4000-8000-000000000001', name: 'p', description: null, groups },
    T0,
  )
  const specs = expandProfileGroups(profile.groups, 100)
  return db
    .transaction()
    .execute((trx) =>
      createArqs(
        trx,
        { profileId: profile.id, specs, projectId: 'proj' },
        { now: T0, uuid: uuids('a0000000') },
      ),
    )
}

async function withDb(
  create: () => Promise<TestDatabase>,
  fn: (db: Kysely<Database>, handle: TestDatabase) => Promise<void>,
) {
  const handle = await create()
  try {
    await fn(handle.db, handle)
  } finally {
    await handle.close()
  }
}

for (const dialect of await testDialects()) {
  const { name, skip } = dialect
  const create = () => dialect.create()

  await test(`arqs: create, get, list and delete on ${name}`, { skip }, () =>
    withDb(create, async (db) => {
      const arqs = await seedArqs(db, [{ 'resources:FPGA': '2' }, { 'resources:GPU': '1' }])
      assert.deepEqual(
        arqs.map((a) => [a.uuid.slice(-2), a.state, a.deviceProfileGroupId, a.projectId]),
        [
          ['01', 'Initial', 0, 'proj'],
          ['02', 'Initial', 0, 'proj'],
          ['03', 'Initial', 1, 'proj'],
        ],
      )
      assert.deepEqual(await getArq(db, arqs[2]!.uuid), arqs[2])
      await assert.rejects(getArq(db, 'nope'), { name: 'NotFoundError', code: 'ARQ_NOT_FOUND' })
      await assert.rejects(
        createArqs(db, { profileId: 999, specs: [{ groupId: 0 }], projectId: null }, { now: T0 }),
        (err: unknown) => err instanceof NotFoundError && err.code === 'DEVICE_PROFILE_NOT_FOUND',
      )

      assert.deepEqual(await listArqs(db), arqs)
      const page1 = await listArqs(db, { limit: 2 })
      assert.deepEqual(page1, arqs.slice(0, 2))
      assert.deepEqual(await listArqs(db, { limit: 2, marker: page1[1]!.uuid }), arqs.slice(2))
      await assert.rejects(listArqs(db, { marker: 'nope' }), { code: 'ARQ_NOT_FOUND' })

      await updateArqStates(db, [arqs[0]!.uuid, arqs[1]!.uuid], 'BindStarted', {
        now: T1,
        set: { instanceUuid: INSTANCE },
      })
      assert.deepEqual(
        (await listArqs(db, { instanceUuid: INSTANCE })).map((a) => a.id),
        [arqs[0]!.id, arqs[1]!.id],
      )
      assert.equal((await listArqs(db, { projectId: 'other' })).length, 0)

      const gone = await deleteArqs(db, { instanceUuid: INSTANCE })
      assert.deepEqual(
        gone.map((a) => a.uuid),
        [arqs[0]!.uuid, arqs[1]!.uuid],
      )
      assert.deepEqual(
        (await deleteArqs(db, { uuids: [arqs[2]!.uuid, 'nope'] })).map((a) => a.id),
        [arqs[2]!.id],
      )
      assert.deepEqual(await listArqs(db), [])
    }),
  )

  await test(
    `arqs: transitions follow the table with one conditional update on ${name}`,
    { skip },
    () =>
      withDb(create, async (db) => {
        const depId = await seedDeployable(db, 2)
        const arqs = await seedArqs(db, [{ 'resources:FPGA': '3' }])
        const all = arqs.map((a) => a.uuid)
        const bind = { hostname: 'h', deviceRpUuid: RP, instanceUuid: INSTANCE, projectId: 'p2' }
        const started = await updateArqStates(db, all, 'BindStarted', { now: T1, set: bind })
        assert.equal(started.count, 3)
        assert.deepEqual(
          started.moved.map((a) => [
            a.state,
            a.hostname,
            a.deviceRpUuid,
            a.instanceUuid,
            a.projectId,
            a.updatedAt,
          ]),
          Array(3).fill(['BindStarted', 'h', RP, INSTANCE, 'p2', T1]),
        )
        assert.equal(
          (await updateArqStates(db, all, 'BindStarted', { now: T1 })).count,
          0,
          'no self-loop',
        )
        assert.equal((await updateArqStates(db, all, 'Initial', { now: T1 })).count, 0)

        const [h1, h2] = await db.selectFrom('attach_handles').select('id').orderBy('id').execute()
        const bound = await updateArqStates(db, [all[0]!, 'nope'], 'Bound', {
          now: T1,
          set: { attachHandleId: h1!.id, deployableId: depId },
        })
        assert.deepEqual(
          bound.moved.map((a) => [a.uuid, a.state, a.attachHandleId, a.deployableId]),
          [[all[0], 'Bound', h1!.id, depId]],
        )
        await assert.rejects(
          updateArqStates(db, [all[1]!], 'Bound', { now: T1, set: { attachHandleId: h1!.id } }),
          (err: unknown) => err instanceof ConflictError && err.code === 'ATTACH_HANDLE_IN_USE',
        )
        assert.equal(
          (await getArq(db, all[1]!)).state,
          'BindStarted',
          'the refused update changed nothing',
        )
        await assert.rejects(
          updateArqStates(db, [all[1]!], 'Bound', { now: T1, set: { attachHandleId: 999999 } }),
          NotFoundError,
        )

        // Bound → UnbindFailed; then Deleting moves the others but not the UnbindFailed one.
        assert.equal((await updateArqStates(db, [all[0]!], 'UnbindFailed', { now: T1 })).count, 1)
        assert.equal(
          (
            await updateArqStates(db, [all[1]!], 'Bound', {
              now: T1,
              set: { attachHandleId: h2!.id },
            })
          ).count,
          1,
        )
        const deleting = await updateArqStates(db, all, 'Deleting', { now: T1 })
        assert.deepEqual(
          deleting.moved.map((a) => a.uuid),
          [all[1], all[2]],
        )
        assert.equal((await getArq(db, all[0]!)).state, 'UnbindFailed')
        const unbound = await updateArqStates(db, [all[0]!], 'Unbound', {
          now: T1,
          set: { attachHandleId: null, hostname: null },
        })
        assert.deepEqual(
          unbound.moved.map((a) => [a.state, a.attachHandleId, a.hostname]),
          [['Unbound', null, null]],
        )
      }),
  )

  await test(`arqs: claim and release attach handles on ${name}`, { skip }, () =>
    withDb(create, async (db) => {
      const depId = await seedDeployable(db, 2)
      const claim = () =>
        db.transaction().execute((trx) => claimAttachHandle(trx, depId, { now: T1 }))
      const a = await claim()
      const b = await claim()
      assert.ok(a && b && a.id < b.id)
      assert.deepEqual([a.inUse, a.updatedAt, a.info.function], [true, T1, '0'])
      assert.equal(await claim(), undefined)
      assert.equal(await claimAttachHandle(db, 999999), undefined)

      assert.equal(await db.transaction().execute((trx) => releaseAttachHandle(trx, a.id)), true)
      assert.equal(await releaseAttachHandle(db, a.id), false, 'already free')
      // A claim whose transaction rolls back is undone.
      await assert.rejects(
        db.transaction().execute(async (trx) => {
          assert.equal((await claimAttachHandle(trx, depId))?.id, a.id)
          throw new Error('rollback')
        }),
        /rollback/,
      )
      assert.equal((await claimAttachHandle(db, depId))?.id, a.id, 'outside a transaction too')
      assert.equal(await claimAttachHandle(db, depId), undefined)
    }),
  )

  await test(
    `arqs: 50 binders on two handles race for 100 attach handles on ${name}`,
    { skip },
    () =>
      withDb(create, async (db, handle) => {
        const depId = await seedDeployable(db, 100)
        // A second "conductor": another connection pool to the same database (SQLite in memory: one handle).
        const other =
          name === 'sqlite' ? undefined : await openDatabase(handle.url, { poolSize: 4 })
        try {
          const dbs = [db, other?.db ?? db]
          const claims: (number | undefined)[] = []
          let started = 0
          const binder = async (i: number) => {
            const mine = dbs[i % 2]!
            while (started < 1000) {
              started++
              const h = await mine.transaction().execute((trx) => claimAttachHandle(trx, depId))
              claims.push(h?.id)
            }
          }
          await Promise.all(Array.from({ length: 50 }, (_, i) => binder(i)))
          assert.equal(claims.length, 1000)
          const won = claims.filter((id): id is number => id !== undefined)
          assert.equal(won.length, 100)
          assert.equal(new Set(won).size, 100, 'no handle claimed twice')
          const { n } = await db
            .selectFrom('attach_handles')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('in_use', '=', 1)
            .executeTakeFirstOrThrow()
          assert.equal(Number(n), 100)
        } finally {
          await other?.close()
        }
      }),
  )
}

for (const dialect of await testDialects()) {
  await test(
    `arqs: instance bind locks upsert and are swept once unused on ${dialect.name}`,
    { skip: dialect.skip },
    () =>
      withDb(
        () => dialect.create(),
        async (db, handle) => {
          const OTHER = 'aaaaaaaa-0000-4000-8000-000000000002'
          await claimInstanceLocks(db, handle.dialect, [OTHER, INSTANCE, INSTANCE], T0)
          await claimInstanceLocks(db, handle.dialect, [INSTANCE], T1) // the second lock of one instance updates its row
          const rows = () =>
            db.selectFrom('arq_instances').selectAll().orderBy('instance_uuid').execute()
          assert.deepEqual(await rows(), [
            { instance_uuid: INSTANCE, updated_at: T1 },
            { instance_uuid: OTHER, updated_at: T0 },
          ])
          const [arq] = await seedArqs(db, [{ 'resources:FPGA': '1' }])
          await updateArqStates(db, [arq!.uuid], 'BindStarted', {
            now: T0,
            set: { instanceUuid: OTHER },
          })
          // Only rows older than the cutoff that no request names go.
          assert.equal(await deleteStaleInstanceLocks(db, '2030-01-01T00:00:00.000000+00:00'), 1)
          assert.deepEqual(
            (await rows()).map((r) => r.instance_uuid),
            [OTHER],
          )
          await deleteArqs(db, { uuids: [arq!.uuid] })
          assert.equal(await deleteStaleInstanceLocks(db, T0), 0, 'not older than the cutoff')
          assert.equal(await deleteStaleInstanceLocks(db, T1), 1)
        },
      ),
  )
}
