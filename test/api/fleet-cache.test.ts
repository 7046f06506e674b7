/**
 * `[api] fleet_cache_ms` (src/api/v2/fleet-reads.ts): within the time, capacity and explain answer
 * from one read of the fleet, so a host reported meanwhile shows only after it; with 0 every
 * request reads the database.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createTestApp } from '../support/api-app.js'
import { ingestSnapshot } from '../support/ingest.js'
import { sampleSnapshot } from '../support/sample-inventory.js'

const totals = async (app: Awaited<ReturnType<typeof createTestApp>>['app']) => {
  const res = await app.inject({
    method: 'GET',
    url: '/v2/capacity?group_by=host',
    headers: { 'openstack-api-version': 'accelerator 2.6' },
  })
  assert.equal(res.statusCode, 200, res.body)
  return (res.json() as { capacity: { hostname: string; total: number }[] }).capacity.map(
    (r) => `${r.hostname}:${r.total}`,
  )
}

for (const [ttl, fresh] of [
  [60_000, false],
  [0, true],
] as const) {
  await test(`fleet_cache_ms = ${ttl}: a host reported between two reads ${fresh ? 'shows at once' : 'waits for the cache'}`, async () => {
    const t = await createTestApp({ fleetCacheMs: ttl })
    try {
      await ingestSnapshot(t.db.db, sampleSnapshot('h1', 1), {
        autoActivate: true,
        now: '2026-11-25T06:00:00.000000+00:00',
      })
      assert.deepEqual(await totals(t.app), ['h1:2'])
      await ingestSnapshot(t.db.db, sampleSnapshot('h2', 1), {
        autoActivate: true,
        now: '2026-11-25T06:00:00.000000+00:00',
      })
      assert.deepEqual(await totals(t.app), fresh ? ['h1:2', 'h2:2'] : ['h1:2'])
    } finally {
      await t.close()
    }
  })
}
