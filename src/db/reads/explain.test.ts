import { test } from 'node:test'
import assert from 'node:assert/strict'
import { testDialects } from '../../../test/support/db.js'
import { ingestSnapshot } from '../../../test/support/ingest.js'
import { sampleSnapshot } from '../../../test/support/sample-inventory.js'
import { listExplainCandidates } from './explain.js'
import { updateHeartbeat } from '../service-rows.js'

const T0 = '2026-11-25T06:00:00.000000+00:00'

for (const dialect of await testDialects()) {
  await test(`explain candidates on ${dialect.name}`, { skip: dialect.skip }, async () => {
    const db = await dialect.create()
    try {
      await ingestSnapshot(db.db, sampleSnapshot('h1', 2), { autoActivate: true, now: T0 })
      await ingestSnapshot(db.db, sampleSnapshot('h2', 1, { handles: 3 }), {
        autoActivate: false,
        now: T0,
      })
      const [first] = await db.db
        .selectFrom('attach_handles')
        .select(['id', 'deployable_id'])
        .orderBy('id')
        .execute()
      await db.db
        .updateTable('attach_handles')
        .set({ in_use: 1 })
        .where('id', '=', first!.id)
        .execute()
      await db.db
        .updateTable('deployables')
        .set({ removal_pending: 1 })
        .where('id', '=', first!.deployable_id)
        .execute()
      await updateHeartbeat(db.db, { host: 'h1', binary: 'cyborg-agent', version: '1' }, T0)

      const all = await listExplainCandidates(db.db, undefined)
      assert.deepEqual(
        all.map((c) => [
          c.name,
          c.hostname,
          c.lifecycle,
          c.removalPending,
          c.agentLastSeen,
          c.handles,
        ]),
        [
          ['h1_0000:10:00.0', 'h1', 'active', true, T0, { total: 2, free: 1, cleaning: 0 }],
          ['h1_0000:11:00.0', 'h1', 'active', false, T0, { total: 2, free: 2, cleaning: 0 }],
          ['h2_0000:10:00.0', 'h2', 'inactive', false, null, { total: 3, free: 3, cleaning: 0 }],
        ],
      )
      assert.deepEqual(all[1]!.attributes, [
        { key: 'rc', value: 'FPGA' },
        { key: 'trait0', value: 'CUSTOM_FPGA_INTEL' },
      ])
      assert.equal(all[0]!.status, 'enabled')
      assert.equal(all[0]!.health, 'ok')
      assert.match(all[0]!.deviceUuid, /^[0-9a-f-]{36}$/)
      assert.match(all[0]!.deployableUuid, /^[0-9a-f-]{36}$/)

      const h2 = await listExplainCandidates(db.db, 'h2')
      assert.deepEqual(
        h2.map((c) => c.name),
        ['h2_0000:10:00.0'],
      )
      // One host reads the same candidates as the fleet does, handles counted on that host only.
      assert.deepStrictEqual(h2, [all[2]])
      assert.deepStrictEqual(await listExplainCandidates(db.db, 'h1'), all.slice(0, 2))
      assert.deepEqual(await listExplainCandidates(db.db, 'nowhere'), [])
    } finally {
      await db.close()
    }
  })
}
