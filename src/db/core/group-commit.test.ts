import { test } from 'node:test'
import assert from 'node:assert/strict'
import { sql } from 'kysely'
import { ConflictError, UnavailableError } from '../../domain/errors.js'
import { createDeviceProfile } from '../device-profiles.js'
import { listDeviceProfiles } from '../reads/device-profile-reads.js'
import type { DatabaseHandle } from './connection.js'
import { isForeignKeyViolation, transientCause } from './errors.js'
import { createGroupCommitter } from './group-commit.js'
import { keyedMarkersFound, writeKeyedMarkers } from './commit-markers.js'
import { formatTimestamp } from '../../domain/time.js'
import { updateHeartbeat } from '../service-rows.js'
import { listServices } from '../reads/service-reads.js'
import { testDialects } from '../../../test/support/db.js'

const NOW = '2024-01-01T00:00:00.000000+00:00'
const uuid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`
const profile = (n: number, name = `p${n}`) => ({
  uuid: uuid(n),
  name,
  description: null,
  groups: [],
})
const markerCount = async (handle: DatabaseHandle) =>
  (await handle.db.selectFrom('commit_markers').select('id').execute()).length

for (const dialect of await testDialects()) {
  const skip = dialect.skip
  await test(
    `group commit: concurrent runs share transactions on ${dialect.name}`,
    { skip },
    async () => {
      const handle = await dialect.create()
      const gc = createGroupCommitter(handle, { intervalMs: 20, maxBatch: 50 })
      try {
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            gc.run(async (trx) => {
              await updateHeartbeat(
                trx,
                { host: `h${String(i).padStart(2, '0')}`, binary: 'cyborg-agent', version: '1' },
                NOW,
              )
              return `result-${i}`
            }),
          ),
        )
        assert.deepEqual(
          results,
          Array.from({ length: 20 }, (_, i) => `result-${i}`),
        )
        const { batches, ops } = gc.stats()
        assert.equal(ops, 20)
        assert.ok(batches < ops, `expected fewer transactions than ops, got ${batches}`)
        assert.equal((await listServices(handle.db)).length, 20)
        await gc.close()
        assert.equal(
          await markerCount(handle),
          0,
          'the commit markers of settled transactions are swept at close',
        )
      } finally {
        await gc.close()
        await handle.close()
      }
    },
  )

  await test(
    `group commit: commit markers are swept as they pile up on ${dialect.name}`,
    { skip },
    async () => {
      const handle = await dialect.create()
      const gc = createGroupCommitter(handle, { intervalMs: 0, maxBatch: 10 })
      try {
        // One at a time: 100 transactions, each with its marker (none on SQLite).
        for (let i = 0; i < 100; i++)
          await gc.run((trx) => createDeviceProfile(trx, profile(i), NOW))
        assert.ok(
          (await markerCount(handle)) < 64,
          'a sweep every 64 transactions keeps the table small',
        )
        await gc.close()
        assert.equal(await markerCount(handle), 0)
      } finally {
        await gc.close()
        await handle.close()
      }
    },
  )

  await test(
    `group commit: keyed markers stay until a day old, then a sweep takes them, on ${dialect.name}`,
    { skip },
    async () => {
      const handle = await dialect.create()
      const gc = createGroupCommitter(handle, { intervalMs: 0, maxBatch: 10 })
      try {
        const hoursAgo = (h: number) => formatTimestamp(new Date(Date.now() - h * 3_600_000))
        await gc.run((trx) => writeKeyedMarkers(trx, [uuid(901)], hoursAgo(25)))
        await gc.run((trx) => writeKeyedMarkers(trx, [uuid(902), uuid(903)], hoursAgo(1)))
        await gc.close()
        assert.deepEqual(
          [
            ...(await keyedMarkersFound(handle.db, [uuid(901), uuid(902), uuid(903), uuid(904)])),
          ].sort(),
          [uuid(902), uuid(903)],
          'the day-old one swept (SQLite too, which settles no markers), the others kept',
        )
      } finally {
        await gc.close()
        await handle.close()
      }
    },
  )

  await test(
    `group commit: a failing op is rolled back alone on ${dialect.name}`,
    { skip },
    async () => {
      const handle = await dialect.create()
      const gc = createGroupCommitter(handle, { intervalMs: 10, maxBatch: 100 })
      try {
        const settled = await Promise.allSettled([
          gc.run((trx) => createDeviceProfile(trx, profile(1), NOW)),
          gc.run(async (trx) => {
            await createDeviceProfile(trx, profile(2), NOW)
            throw new Error('boom after a write')
          }),
          gc.run((trx) => createDeviceProfile(trx, profile(3, 'p1'), NOW)), // duplicate name: a database error
          gc.run((trx) => createDeviceProfile(trx, profile(4), NOW)),
        ])
        assert.equal(gc.stats().batches, 1)
        assert.equal(settled[0].status === 'fulfilled' && settled[0].value.name, 'p1')
        assert.equal(
          settled[1].status === 'rejected' && (settled[1].reason as Error).message,
          'boom after a write',
        )
        assert.ok(settled[2].status === 'rejected' && settled[2].reason instanceof ConflictError)
        assert.equal(settled[3].status === 'fulfilled' && settled[3].value.uuid, uuid(4))
        assert.deepEqual(
          (await listDeviceProfiles(handle.db)).map((p) => p.name),
          ['p1', 'p4'],
        )
      } finally {
        await gc.close()
        await handle.close()
      }
    },
  )

  await test(`group commit: maxBatch, interval 0, close on ${dialect.name}`, { skip }, async () => {
    const handle = await dialect.create()
    const gc = createGroupCommitter(handle, { intervalMs: 0, maxBatch: 3 })
    try {
      const runs = Array.from({ length: 10 }, (_, i) =>
        gc.run(async (trx) => {
          await createDeviceProfile(trx, profile(i), NOW)
          return i
        }),
      )
      await gc.close() // flushes what is waiting
      assert.deepEqual(await Promise.all(runs), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
      const { batches, ops } = gc.stats()
      assert.equal(ops, 10)
      assert.ok(batches >= 4, `maxBatch 3 needs at least 4 batches for 10 ops, got ${batches}`)
      await assert.rejects(
        gc.run(() => Promise.resolve(1)),
        UnavailableError,
      )
      assert.equal((await listDeviceProfiles(handle.db)).length, 10)
    } finally {
      await handle.close()
    }
  })
}

// SQLite can defer foreign-key checks to COMMIT, which lets a test make the COMMIT itself fail.
const sqlite = (await testDialects()).find((d) => d.name === 'sqlite')!
await test('group commit: a failed COMMIT retries each op alone (sqlite)', async () => {
  const handle = await sqlite.create()
  const gc = createGroupCommitter(handle, { intervalMs: 10, maxBatch: 10 })
  try {
    const settled = await Promise.allSettled([
      gc.run((trx) => createDeviceProfile(trx, profile(1), NOW)),
      gc.run(async (trx) => {
        await sql`PRAGMA defer_foreign_keys = ON`.execute(trx)
        await trx
          .insertInto('attributes')
          .values({
            uuid: uuid(9),
            deployable_id: 424242,
            key: 'k',
            value: 'v',
            created_at: NOW,
            updated_at: null,
          })
          .execute()
        return 'orphan'
      }),
      gc.run((trx) => createDeviceProfile(trx, profile(2), NOW)),
    ])
    assert.deepEqual(
      settled.map((s) => s.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    )
    assert.ok(settled[1].status === 'rejected' && isForeignKeyViolation(settled[1].reason))
    assert.deepEqual(
      (await listDeviceProfiles(handle.db)).map((p) => p.name),
      ['p1', 'p2'],
    )
    assert.equal((await handle.db.selectFrom('attributes').selectAll().execute()).length, 0)
    assert.equal(gc.stats().batches, 1)
  } finally {
    await gc.close()
    await handle.close()
  }
})

await test('group commit: a write lost to a deadlock (a Galera certification failure) runs again, told to onRetry', async () => {
  const handle = await sqlite.create()
  const causes: string[] = []
  const gc = createGroupCommitter(handle, {
    intervalMs: 10,
    maxBatch: 10,
    onRetry: (cause) => causes.push(cause),
  })
  try {
    let runs = 0
    const certificationFailure = Object.assign(new Error('Deadlock found'), { errno: 1213 })
    const settled = await Promise.all([
      gc.run(async (trx) => {
        if (runs++ === 0) throw certificationFailure
        await createDeviceProfile(trx, profile(1), NOW)
        return 'second run'
      }),
      gc.run((trx) => createDeviceProfile(trx, profile(2), NOW).then(() => 'alone')),
    ])
    assert.deepEqual(settled, ['second run', 'alone'])
    assert.deepEqual(causes, ['deadlock'])
    assert.equal(
      transientCause(Object.assign(new Error('not ready'), { errno: 1047 })),
      'not_ready',
    )
    assert.equal(transientCause(new Error('other')), undefined)
  } finally {
    await gc.close()
    await handle.close()
  }
})

await test('group commit: a write whose connection is lost before its COMMIT (a killed Galera node) runs again', async () => {
  const handle = await sqlite.create()
  const causes: string[] = []
  const gc = createGroupCommitter(handle, {
    intervalMs: 0,
    maxBatch: 1,
    onRetry: (c) => causes.push(c),
  })
  try {
    let runs = 0
    const lost = () =>
      Object.assign(new Error('Connection lost: The server closed the connection.'), {
        code: 'PROTOCOL_CONNECTION_LOST',
      })
    const value = await gc.run(async (trx) => {
      if (runs++ === 0) throw lost()
      await createDeviceProfile(trx, profile(1), NOW)
      return 'second run'
    })
    assert.equal(value, 'second run')
    assert.deepEqual(causes, ['connection_lost'])
    // Any other error of the op is its own: not run again.
    await assert.rejects(
      gc.run(() => Promise.reject(new Error('bad input'))),
      /bad input/,
    )
    assert.deepEqual(causes, ['connection_lost'])
  } finally {
    await gc.close()
    await handle.close()
  }
})
