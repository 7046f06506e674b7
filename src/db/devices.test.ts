import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { Kysely } from 'kysely'
import { InvalidInputError, NotFoundError } from '../domain/errors.js'
import { listAttachHandles } from './attach-handles.js'
import {
  getDeployable,
  getDeployableById,
  listDeployables,
  type DeployableSortKey,
} from './reads/deployable-reads.js'
import { updateDeviceStatus } from './devices.js'
import {
  getDevice,
  listDevices,
  listDevicesByHost,
  type DeviceFilter,
  type DeviceSortKey,
} from './reads/device-reads.js'
import { ingestSnapshot } from '../../test/support/ingest.js'
import { sampleSnapshot } from '../../test/support/sample-inventory.js'
import type { Database } from './core/schema.js'
import { testDialects } from '../../test/support/db.js'

const T0 = '2024-01-01T00:00:00.000000+00:00'
const T1 = '2024-01-02T00:00:00.000000+00:00'

async function seed(db: Kysely<Database>) {
  await ingestSnapshot(db, sampleSnapshot('host-a', 5), { autoActivate: false, now: T0 })
  await ingestSnapshot(db, sampleSnapshot('host-b', 3, { handles: 1 }), {
    autoActivate: true,
    now: T0,
  })
}

/** Walks every page of a list and returns the uuids in order. */
async function walk<F extends object>(
  list: (f: NoInfer<F> & { marker?: string; limit?: number }) => Promise<{ uuid: string }[]>,
  filter: F,
  limit: number,
): Promise<string[]> {
  const out: string[] = []
  for (let page = await list({ ...filter, limit }); page.length > 0;) {
    out.push(...page.map((r) => r.uuid))
    page = await list({ ...filter, limit, marker: page.at(-1)!.uuid })
  }
  return out
}

for (const dialect of await testDialects()) {
  const name = dialect.name
  await test(
    `devices: filters, sorting and marker pagination on ${name}`,
    { skip: dialect.skip },
    async () => {
      const handle = await dialect.create()
      try {
        const { db } = handle
        await seed(db)
        const all = await listDevices(db, {})
        assert.equal(all.length, 8)
        assert.deepEqual(
          all.map((d) => d.id),
          [...all.map((d) => d.id)].sort((a, b) => a - b),
        )
        assert.equal((await listDevices(db, { hostname: 'host-b' })).length, 3)
        assert.deepEqual(
          (await listDevicesByHost(db, 'host-b')).map((d) => d.lifecycle),
          ['active', 'active', 'active'],
        )
        assert.deepEqual(
          (await listDevicesByHost(db, 'host-a')).map((d) => d.lifecycle)[0],
          'inactive',
        )
        assert.equal((await listDevices(db, { type: 'GPU' })).length, 5)
        assert.equal(
          (await listDevices(db, { type: 'GPU', vendor: '10de', hostname: 'host-a' })).length,
          1,
        )
        assert.deepEqual(all[0]!.controlPath, {
          domain: '0000',
          bus: '10',
          device: '00',
          function: '0',
        })

        // Give two devices an updated_at, so that the nullable sort key has NULLs and values.
        await updateDeviceStatus(db, all[6]!.uuid, 'maintaining', T1)
        await updateDeviceStatus(db, all[2]!.uuid, 'maintaining', T1)
        const fresh = await listDevices(db, {})
        for (const sortKey of [
          'vendor',
          'updated_at',
          'hostname',
          'id',
        ] satisfies DeviceSortKey[]) {
          for (const sortDir of ['asc', 'desc'] as const) {
            const filter: DeviceFilter = { sortKey, sortDir }
            const expected = [...fresh]
              .sort((a, b) => {
                const ka = String(
                  sortKey === 'updated_at'
                    ? (a.updatedAt ?? '')
                    : sortKey === 'id'
                      ? ''
                      : a[sortKey],
                )
                const kb = String(
                  sortKey === 'updated_at'
                    ? (b.updatedAt ?? '')
                    : sortKey === 'id'
                      ? ''
                      : b[sortKey],
                )
                const c = ka < kb ? -1 : ka > kb ? 1 : a.id - b.id
                return sortDir === 'asc' ? c : -c
              })
              .map((d) => d.uuid)
            assert.deepEqual(
              (await listDevices(db, filter)).map((d) => d.uuid),
              expected,
              `${sortKey} ${sortDir}`,
            )
            assert.deepEqual(
              await walk((f) => listDevices(db, f), filter, 3),
              expected,
              `paged ${sortKey} ${sortDir}`,
            )
          }
        }
        assert.deepEqual(
          await walk((f) => listDevices(db, f), { hostname: 'host-a' }, 2),
          fresh.slice(0, 5).map((d) => d.uuid),
        )

        await assert.rejects(
          listDevices(db, { marker: '00000000-0000-0000-0000-000000000000' }),
          (err: unknown) => {
            assert.ok(err instanceof NotFoundError)
            assert.equal(err.details?.field, 'marker')
            return true
          },
        )
        await assert.rejects(
          listDevices(db, { sortKey: 'bogus' as DeviceSortKey }),
          InvalidInputError,
        )
        await assert.rejects(listDevices(db, { limit: 0 }), InvalidInputError)
      } finally {
        await handle.close()
      }
    },
  )

  await test(
    `devices: get, not found and status update on ${name}`,
    { skip: dialect.skip },
    async () => {
      const handle = await dialect.create()
      try {
        const { db } = handle
        await seed(db)
        const [first] = await listDevices(db, { limit: 1 })
        assert.ok(first)
        assert.deepEqual(await getDevice(db, first.uuid), first)
        assert.equal(first.status, 'enabled')
        assert.equal(first.updatedAt, null)
        const saved = await updateDeviceStatus(db, first.uuid, 'maintaining', T1)
        assert.equal(saved.status, 'maintaining')
        assert.equal(saved.updatedAt, T1)
        assert.deepEqual(await getDevice(db, first.uuid), saved)
        const missing = '11111111-1111-1111-1111-111111111111'
        await assert.rejects(getDevice(db, missing), {
          name: 'NotFoundError',
          code: 'DEVICE_NOT_FOUND',
        })
        await assert.rejects(updateDeviceStatus(db, missing, 'enabled', T1), {
          code: 'DEVICE_NOT_FOUND',
        })
      } finally {
        await handle.close()
      }
    },
  )

  await test(`deployables and attach handles on ${name}`, { skip: dialect.skip }, async () => {
    const handle = await dialect.create()
    try {
      const { db } = handle
      await seed(db)
      const all = await listDeployables(db, {})
      assert.equal(all.length, 8)
      const [dev] = await listDevicesByHost(db, 'host-b')
      const mine = await listDeployables(db, { deviceId: dev!.id })
      assert.equal(mine.length, 1)
      const dep = mine[0]!
      assert.equal(dep.name, 'host-b_0000:10:00.0')
      assert.equal(dep.numAccelerators, 1)
      assert.match(dep.rpUuid ?? '', /^[0-9a-f-]{36}$/)
      assert.deepEqual(await listDeployables(db, { name: dep.name }), [dep])
      assert.deepEqual(await getDeployable(db, dep.uuid), dep)
      assert.deepEqual(await getDeployableById(db, dep.id), dep)
      await assert.rejects(getDeployable(db, 'nope'), { code: 'DEPLOYABLE_NOT_FOUND' })
      await assert.rejects(getDeployableById(db, 999999), { code: 'DEPLOYABLE_NOT_FOUND' })

      const sortKey: DeployableSortKey = 'num_accelerators'
      const expected = [...all]
        .sort((a, b) => b.numAccelerators - a.numAccelerators || b.id - a.id)
        .map((d) => d.uuid)
      assert.deepEqual(
        await walk((f) => listDeployables(db, f), { sortKey, sortDir: 'desc' as const }, 3),
        expected,
      )
      await assert.rejects(listDeployables(db, { marker: 'nope' }), {
        code: 'DEPLOYABLE_NOT_FOUND',
      })

      const handles = await listAttachHandles(db, { deployableId: all[0]!.id })
      assert.deepEqual(
        handles.map((h) => [h.type, h.info.function, h.inUse]),
        [
          ['PCI', '0', false],
          ['PCI', '1', false],
        ],
      )
      assert.equal((await listAttachHandles(db)).length, 5 * 2 + 3)
    } finally {
      await handle.close()
    }
  })
}
