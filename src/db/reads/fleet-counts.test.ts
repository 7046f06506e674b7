import { test } from 'node:test'
import assert from 'node:assert/strict'
import { testDialects } from '../../../test/support/db.js'
import { ingestSnapshot } from '../../../test/support/ingest.js'
import { sampleSnapshot } from '../../../test/support/sample-inventory.js'
import { getFleetCounts } from './fleet-counts.js'
import { updateHeartbeat } from '../service-rows.js'

const T0 = '2026-11-25T06:00:00.000000+00:00'
const T1 = '2026-11-25T06:05:00.000000+00:00'

for (const dialect of await testDialects()) {
  await test(`fleet counts on ${dialect.name}`, { skip: dialect.skip }, async () => {
    const db = await dialect.create()
    try {
      await ingestSnapshot(db.db, sampleSnapshot('h1', 2, { handles: 2 }), {
        autoActivate: true,
        now: T0,
      })
      await ingestSnapshot(db.db, sampleSnapshot('h2', 1), { autoActivate: false, now: T0 })
      await db.db.updateTable('attach_handles').set({ in_use: 1 }).where('id', '=', 1).execute()
      await db.db
        .updateTable('attach_handles')
        .set({ in_use: 1, clean_state: 'pending' })
        .where('id', '=', 2)
        .execute()
      await updateHeartbeat(db.db, { host: 'h1', binary: 'cyborg-agent', version: '1' }, T1)
      await updateHeartbeat(db.db, { host: 'h2', binary: 'cyborg-agent', version: '1' }, T0)
      const c = await getFleetCounts(db.db, '2026-11-25T06:04:00.000000+00:00')
      /** n summed by the key of each row. */
      const sum = <R extends { n: number }>(rows: R[], key: (r: R) => string) => {
        const out: Record<string, number> = {}
        for (const r of rows) out[key(r)] = (out[key(r)] ?? 0) + r.n
        return out
      }
      assert.deepEqual(
        sum(c.devices, (d) => `${d.host} ${d.lifecycle} ${d.status} ${d.health}`),
        { 'h1 active enabled ok': 2, 'h2 inactive enabled ok': 1 },
      )
      assert.equal(
        c.devices.reduce((n, d) => n + d.n, 0),
        3,
      )
      assert.deepEqual(
        sum(c.deployables, (d) => d.host),
        { h1: 2, h2: 1 },
      )
      assert.deepEqual(
        sum(c.handles, (h) => `${h.host} ${h.state}`),
        {
          'h1 free': 2,
          'h1 in_use': 1,
          'h1 cleaning': 1,
          'h2 free': 2, // sampleSnapshot's default: 2 handles per deployable
        },
      )
      assert.deepEqual(c.arqs, [])
      assert.deepEqual(c.agents, { up: 1, down: 1 })
    } finally {
      await db.close()
    }
  })
}
