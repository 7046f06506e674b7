import { test } from 'node:test'
import assert from 'node:assert/strict'
import { testDialects } from '../../../test/support/db.js'
import { ingestSnapshot } from '../../../test/support/ingest.js'
import { sampleSnapshot } from '../../../test/support/sample-inventory.js'
import { getDeviceSummary } from './device-summary.js'

const T0 = '2026-11-25T06:00:00.000000+00:00'
const T1 = '2026-11-25T06:01:00.000000+00:00'
const T2 = '2026-11-25T06:02:00.000000+00:00'

for (const dialect of await testDialects()) {
  await test(`the device summary on ${dialect.name}`, { skip: dialect.skip }, async () => {
    const db = await dialect.create()
    try {
      const empty = await getDeviceSummary(db.db)
      assert.deepEqual(empty, {
        total: 0,
        byType: {},
        byLifecycle: {},
        byStatus: {},
        byHealth: {},
        hosts: [],
        unhealthy: { total: 0, devices: [] },
      })

      // h1: GPU, FPGA (active); h2: GPU, FPGA, GPU (inactive); h3: GPU (active).
      await ingestSnapshot(db.db, sampleSnapshot('h1', 2), { autoActivate: true, now: T0 })
      await ingestSnapshot(db.db, sampleSnapshot('h2', 3), { autoActivate: false, now: T0 })
      await ingestSnapshot(db.db, sampleSnapshot('h3', 1), { autoActivate: true, now: T0 })
      const set = (host: string, type: string, values: Record<string, string | null>) =>
        db.db
          .updateTable('devices')
          .set(values)
          .where('hostname', '=', host)
          .where('type', '=', type)
          .execute()
      await set('h1', 'FPGA', { health: 'failed', health_reason: '2 ECC', health_updated_at: T1 })
      await set('h2', 'FPGA', { health: 'degraded', health_reason: 'hot', health_updated_at: T2 })
      await set('h3', 'GPU', { health: 'unknown', health_reason: null, health_updated_at: null })
      await set('h1', 'GPU', { status: 'maintaining' })

      const s = await getDeviceSummary(db.db)
      assert.equal(s.total, 6)
      assert.deepEqual(s.byType, { GPU: 4, FPGA: 2 })
      assert.deepEqual(s.byLifecycle, { active: 3, inactive: 3 })
      assert.deepEqual(s.byStatus, { enabled: 5, maintaining: 1 })
      assert.deepEqual(s.byHealth, { ok: 3, failed: 1, degraded: 1, unknown: 1 })
      assert.deepEqual(s.hosts, [
        { hostname: 'h1', devices: 2, unhealthy: 1 },
        { hostname: 'h2', devices: 3, unhealthy: 1 },
        { hostname: 'h3', devices: 1, unhealthy: 1 },
      ])
      assert.equal(s.unhealthy.total, 3)
      // The newest change first; one never changed has had its health since it was created (T0).
      assert.deepEqual(
        s.unhealthy.devices.map((d) => [d.hostname, d.type, d.health, d.healthReason]),
        [
          ['h2', 'FPGA', 'degraded', 'hot'],
          ['h1', 'FPGA', 'failed', '2 ECC'],
          ['h3', 'GPU', 'unknown', null],
        ],
      )
      assert.deepEqual(
        s.unhealthy.devices.map((d) => d.healthUpdatedAt?.slice(0, 19) ?? null),
        [T2.slice(0, 19), T1.slice(0, 19), null],
      )
      assert.deepEqual(
        s.unhealthy.devices.map((d) => d.healthSince.slice(0, 19)),
        [T2, T1, T0].map((t) => t.slice(0, 19)),
      )
      const uuid = await db.db
        .selectFrom('devices')
        .select('uuid')
        .where('hostname', '=', 'h2')
        .where('type', '=', 'FPGA')
        .executeTakeFirstOrThrow()
      assert.equal(s.unhealthy.devices[0]!.uuid, uuid.uuid)

      // The cap lists fewer, the total still counts them all.
      const capped = await getDeviceSummary(db.db, 1)
      assert.equal(capped.unhealthy.total, 3)
      assert.deepEqual(
        capped.unhealthy.devices.map((d) => d.hostname),
        ['h2'],
      )
    } finally {
      await db.close()
    }
  })
}
