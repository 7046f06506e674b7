import { test } from 'node:test'
import assert from 'node:assert/strict'
import { testDialects } from '../../../test/support/db.js'
import { migrateToLatest } from './migrate.js'

for (const dialect of await testDialects()) {
  await test(
    `migrations create every table and are idempotent on ${dialect.name}`,
    { skip: dialect.skip },
    async () => {
      const db = await dialect.create()
      try {
        const again = await migrateToLatest(db)
        assert.deepEqual(again.applied, [])
        const tables = (await db.db.introspection.getTables()).map((t) => t.name).sort()
        for (const t of [
          'accelerator_requests',
          'agent_drivers',
          'attach_handles',
          'attributes',
          'deployables',
          'device_profiles',
          'devices',
          'event_relay',
          'events',
          'services',
        ]) {
          assert.ok(tables.includes(t), `missing table ${t} in ${tables.join(',')}`)
        }
      } finally {
        await db.close()
      }
    },
  )
}
