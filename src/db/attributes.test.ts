import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ConflictError, NotFoundError } from '../domain/errors.js'
import { createAttribute, deleteAttribute } from './attributes.js'
import {
  getAttribute,
  listAttributes,
  listAttributesByDeployableIds,
} from './reads/attribute-reads.js'
import { listDeployables } from './reads/deployable-reads.js'
import { ingestSnapshot } from '../../test/support/ingest.js'
import { sampleSnapshot } from '../../test/support/sample-inventory.js'
import { testDialects } from '../../test/support/db.js'

const NOW = '2024-01-01T00:00:00.000000+00:00'
const uuid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`

for (const dialect of await testDialects()) {
  await test(
    `attributes: list, create, duplicate, unknown deployable, delete on ${dialect.name}`,
    { skip: dialect.skip },
    async () => {
      const handle = await dialect.create()
      try {
        const { db } = handle
        await ingestSnapshot(db, sampleSnapshot('host-a', 3), { autoActivate: false, now: NOW })
        const [a, b, c] = await listDeployables(db, {})
        assert.ok(a && b && c)
        assert.deepEqual(
          (await listAttributes(db, { deployableId: a.id })).map((x) => [x.key, x.value]),
          [
            ['rc', 'PGPU'],
            ['trait0', 'CUSTOM_GPU_NVIDIA'],
          ],
        )
        assert.equal((await listAttributes(db, { key: 'rc' })).length, 3)
        assert.equal((await listAttributes(db)).length, 6)

        const created = await createAttribute(
          db,
          { deployableId: b.id, key: 'trait1', value: 'CUSTOM_X' },
          { now: NOW, uuid: uuid(1) },
        )
        assert.deepEqual(
          { ...created, id: 0 },
          {
            id: 0,
            uuid: uuid(1),
            deployableId: b.id,
            key: 'trait1',
            value: 'CUSTOM_X',
            createdAt: NOW,
            updatedAt: null,
          },
        )
        assert.deepEqual(await getAttribute(db, uuid(1)), created)

        await assert.rejects(
          createAttribute(
            db,
            { deployableId: b.id, key: 'trait1', value: 'other' },
            { now: NOW, uuid: uuid(2) },
          ),
          (err: unknown) => err instanceof ConflictError && err.details?.field === 'key',
        )
        await assert.rejects(
          createAttribute(
            db,
            { deployableId: 999999, key: 'rc', value: 'GPU' },
            { now: NOW, uuid: uuid(3) },
          ),
          (err: unknown) => err instanceof NotFoundError && err.details?.field === 'deployable_id',
        )
        // The same key on another deployable is fine.
        await createAttribute(
          db,
          { deployableId: c.id, key: 'trait1', value: 'CUSTOM_X' },
          { now: NOW, uuid: uuid(4) },
        )

        const byDep = await listAttributesByDeployableIds(db, [a.id, b.id, c.id, 424242])
        assert.deepEqual([...byDep.keys()], [a.id, b.id, c.id, 424242])
        assert.deepEqual(
          byDep.get(b.id)?.map((x) => x.key),
          ['rc', 'trait0', 'trait1'],
        )
        assert.deepEqual(byDep.get(424242), [])
        assert.equal((await listAttributesByDeployableIds(db, [])).size, 0)

        await deleteAttribute(db, uuid(1))
        await assert.rejects(getAttribute(db, uuid(1)), { code: 'ATTRIBUTE_NOT_FOUND' })
        await assert.rejects(deleteAttribute(db, uuid(1)), { code: 'ATTRIBUTE_NOT_FOUND' })
        assert.equal((await listAttributes(db, { deployableId: b.id })).length, 2)
      } finally {
        await handle.close()
      }
    },
  )
}
