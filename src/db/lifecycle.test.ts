import { test } from 'node:test'
import assert from 'node:assert/strict'
import { getDevice, listDevicesByHost } from './reads/device-reads.js'
import { ingestSnapshot } from '../../test/support/ingest.js'
import { MAX_LIFECYCLE_REASON, updateDeviceLifecycle } from './lifecycle.js'
import { sampleSnapshot } from '../../test/support/sample-inventory.js'
import { testDialects } from '../../test/support/db.js'

const T0 = '2024-01-01T00:00:00.000000+00:00'
const T1 = '2024-01-02T00:00:00.000000+00:00'

for (const dialect of await testDialects()) {
  void test(
    `lifecycle transitions are conditional (${dialect.name})`,
    { skip: dialect.skip },
    async () => {
      const handle = await dialect.create()
      try {
        const { db } = handle
        await ingestSnapshot(db, sampleSnapshot('h1', 1), { autoActivate: false, now: T0 })
        const [device] = await listDevicesByHost(db, 'h1')
        const uuid = device!.uuid
        assert.equal(
          await updateDeviceLifecycle(
            db,
            uuid,
            { from: ['inactive', 'error'], to: 'installing', reason: null },
            T1,
          ),
          true,
        )
        // A second claim finds the device no longer inactive or error: no row moves.
        assert.equal(
          await updateDeviceLifecycle(
            db,
            uuid,
            { from: ['inactive', 'error'], to: 'installing', reason: null },
            T1,
          ),
          false,
        )
        assert.equal(
          await updateDeviceLifecycle(
            db,
            crypto.randomUUID(),
            { from: ['installing'], to: 'active', reason: null },
            T1,
          ),
          false,
        )
        const long = 'x'.repeat(MAX_LIFECYCLE_REASON + 50)
        assert.equal(
          await updateDeviceLifecycle(
            db,
            uuid,
            { from: ['installing'], to: 'error', reason: long },
            T1,
          ),
          true,
        )
        const saved = await getDevice(db, uuid)
        assert.equal(saved.lifecycle, 'error')
        assert.equal(saved.lifecycleReason, long.slice(0, MAX_LIFECYCLE_REASON))
        assert.equal(saved.updatedAt, T1)
      } finally {
        await handle.close()
      }
    },
  )
}
