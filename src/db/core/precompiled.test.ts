import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { Kysely } from 'kysely'
import { NotFoundError } from '../../domain/errors.js'
import { createDeviceProfile } from '../device-profiles.js'
import { getDeviceProfileByName, listDeviceProfiles } from '../reads/device-profile-reads.js'
import { precompile, precompileWrite } from './precompiled.js'
import type { Database } from './schema.js'
import type { ReadDb } from './connection.js'
import { testDialects } from '../../../test/support/db.js'

const T0 = '2024-01-01T00:00:00.000000+00:00'
const UUIDS = [
  '0b0e5fd4-6f4a-4d2b-9d1c-9a5a3f7d2e11',
  '1c1f60e5-705b-4e3c-8e2d-0b6b408e3f22',
  '2d2071f6-816c-4f4d-9f3e-1c7c519f4033',
]

const create = (db: Kysely<Database>, i: number, description: string | null = null) =>
  createDeviceProfile(
    db,
    { uuid: UUIDS[i]!, name: `dp-${i}`, description, groups: [{ 'resources:FPGA': '1' }] },
    T0,
  )

// Arguments in two places, a constant between them, and a LIMIT: each call gets its own values.
const namedFromWithoutDescription = precompile((db: ReadDb, from: string, limit: number) =>
  db
    .selectFrom('device_profiles')
    .select(['uuid', 'name'])
    .where('name', '>=', from)
    .where('description', 'is', null)
    .orderBy('id')
    .limit(limit),
)

for (const dialect of await testDialects()) {
  const name = dialect.name
  await test(`precompiled queries on ${name}`, { skip: dialect.skip }, async (t) => {
    const handle = await dialect.create()
    try {
      const { db } = handle
      for (let i = 0; i < 3; i++) await create(db, i, i === 1 ? 'described' : null)

      await t.test('binds each call’s arguments, keeps the constants', async () => {
        assert.deepEqual(await namedFromWithoutDescription(db, 'dp-0', 10), [
          { uuid: UUIDS[0], name: 'dp-0' },
          { uuid: UUIDS[2], name: 'dp-2' },
        ])
        assert.deepEqual(await namedFromWithoutDescription(db, 'dp-1', 10), [
          { uuid: UUIDS[2], name: 'dp-2' },
        ])
        assert.deepEqual(await namedFromWithoutDescription(db, 'dp-0', 1), [
          { uuid: UUIDS[0], name: 'dp-0' },
        ])
        assert.deepEqual(
          (await listDeviceProfiles(db)).map((p) => p.name),
          ['dp-0', 'dp-1', 'dp-2'],
        )
      })

      await t.test(
        '.first gives the first row or undefined, directly and in a transaction',
        async () => {
          assert.deepEqual(await namedFromWithoutDescription.first(db, 'dp-1', 10), {
            uuid: UUIDS[2],
            name: 'dp-2',
          })
          assert.equal(await namedFromWithoutDescription.first(db, 'dp-3', 10), undefined)
          await db.transaction().execute(async (trx) => {
            assert.deepEqual(await namedFromWithoutDescription.first(trx, 'dp-0', 10), {
              uuid: UUIDS[0],
              name: 'dp-0',
            })
            assert.equal(await namedFromWithoutDescription.first(trx, 'dp-3', 10), undefined)
          })
        },
      )

      await t.test('inside a transaction, reads the transaction’s own writes', async () => {
        await assert.rejects(
          db.transaction().execute(async (trx) => {
            await createDeviceProfile(
              trx,
              { uuid: crypto.randomUUID(), name: 'dp-tx', description: null, groups: [] },
              T0,
            )
            assert.equal((await getDeviceProfileByName(trx, 'dp-tx')).name, 'dp-tx')
            throw new Error('roll back')
          }),
          /roll back/,
        )
        await assert.rejects(getDeviceProfileByName(db, 'dp-tx'), NotFoundError)
      })

      await t.test(
        'a read beside an open transaction never sees its uncommitted rows',
        async () => {
          let inserted!: () => void
          const insertedOnce = new Promise<void>((resolve) => (inserted = resolve))
          let release!: () => void
          const released = new Promise<void>((resolve) => (release = resolve))
          const trx = db.transaction().execute(async (trx) => {
            await createDeviceProfile(
              trx,
              { uuid: crypto.randomUUID(), name: 'dp-open', description: null, groups: [] },
              T0,
            )
            inserted()
            await released
            throw new Error('roll back')
          })
          await insertedOnce
          // On SQLite (one connection) the read waits for the transaction; elsewhere it runs beside it.
          const read = getDeviceProfileByName(db, 'dp-open').then(
            () => 'found',
            (err: unknown) => (err instanceof NotFoundError ? 'not found' : err),
          )
          await new Promise((resolve) => setTimeout(resolve, 20))
          release()
          await assert.rejects(trx, /roll back/)
          assert.equal(await read, 'not found')
        },
      )

      await t.test(
        'compiled once for the database and its transactions; a write runs in its transaction',
        async () => {
          let builds = 0
          const described = precompile((db: ReadDb, name: string) => {
            builds++
            return db.selectFrom('device_profiles').select('description').where('name', '=', name)
          })
          const describe = precompileWrite((db: Kysely<Database>, text: string, name: string) =>
            db.updateTable('device_profiles').set({ description: text }).where('name', '=', name),
          )
          assert.deepEqual(await described(db, 'dp-1'), [{ description: 'described' }])
          await assert.rejects(
            db.transaction().execute(async (trx) => {
              const res = await describe(trx, 'in a transaction', 'dp-0')
              assert.equal(Number(res.numAffectedRows), 1)
              assert.deepEqual(await described(trx, 'dp-0'), [{ description: 'in a transaction' }])
              throw new Error('roll back')
            }),
            /roll back/,
          )
          assert.deepEqual(await described(db, 'dp-0'), [{ description: null }])
          await db.transaction().execute((trx) => describe(trx, 'committed', 'dp-0'))
          assert.deepEqual(await described(db, 'dp-0'), [{ description: 'committed' }])
          assert.equal(builds, 1)
          await describe(db, null as unknown as string, 'dp-0') // as it was, for the tests after
        },
      )

      await t.test('a builder that leaves an argument unused is refused', async () => {
        const unused = precompile((db: ReadDb, _name: string) =>
          db.selectFrom('device_profiles').select('id'),
        )
        await assert.rejects(unused(db, 'x'), /does not use argument 1/)
      })
    } finally {
      await handle.close()
    }
  })
}
