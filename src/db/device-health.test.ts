import { test } from 'node:test'
import assert from 'node:assert/strict'
import { listDevicesByHost } from './reads/device-reads.js'
import { applyHealthChange, getDeviceHealth } from './device-health.js'
import { listHealthTransitions } from './health-transitions.js'
import { getReportHash, updateReportHash } from './service-rows.js'
import { ingestSnapshot } from '../../test/support/ingest.js'
import { sampleSnapshot } from '../../test/support/sample-inventory.js'
import { testDialects } from '../../test/support/db.js'

const T0 = '2024-01-01T00:00:00.000000+00:00'
const T1 = '2024-01-02T00:00:00.000000+00:00'

for (const dialect of await testDialects()) {
  void test(
    `device health: one writer applies a decided change (${dialect.name})`,
    { skip: dialect.skip },
    async () => {
      const handle = await dialect.create()
      try {
        const { db } = handle
        await ingestSnapshot(db, sampleSnapshot('h1', 1), { autoActivate: false, now: T0 })
        await updateReportHash(db, 'h1', 'abc', T0)
        const [device] = await listDevicesByHost(db, 'h1')
        const id = device!.id
        assert.deepEqual(await getDeviceHealth(db, id), {
          deviceId: id,
          health: 'ok',
          healthReason: null,
        })
        assert.equal(await getDeviceHealth(db, id + 1000), undefined)
        await db.updateTable('devices').set({ healthy_reports: 1 }).where('id', '=', id).execute()

        // A change of state: the row, the damping count back to 0, the transition; the hash kept.
        const fence = { from: 'ok', to: 'failed', reason: 'clean failed: x' }
        await applyHealthChange(
          db,
          'h1',
          {
            deviceId: id,
            health: 'failed',
            reason: 'clean failed: x',
            transition: fence,
            forceReport: false,
          },
          T1,
        )
        let row = await db
          .selectFrom('devices')
          .selectAll()
          .where('id', '=', id)
          .executeTakeFirstOrThrow()
        assert.deepEqual(
          [row.health, row.health_reason, row.health_updated_at, row.healthy_reports],
          ['failed', 'clean failed: x', T1, 0],
        )
        assert.deepEqual(
          (await listHealthTransitions(db)).map((t) => [t.deviceUuid, t.from, t.to, t.reason]),
          [[device!.uuid, 'ok', 'failed', 'clean failed: x']],
        )
        assert.equal(await getReportHash(db, 'h1'), 'abc')

        // A change of reason alone: no transition, the damping count left as it is.
        await db.updateTable('devices').set({ healthy_reports: 1 }).where('id', '=', id).execute()
        await applyHealthChange(
          db,
          'h1',
          { deviceId: id, reason: 'clean failed: y', forceReport: false },
          T0,
        )
        row = await db
          .selectFrom('devices')
          .selectAll()
          .where('id', '=', id)
          .executeTakeFirstOrThrow()
        assert.deepEqual(
          [row.health, row.health_reason, row.health_updated_at, row.healthy_reports],
          ['failed', 'clean failed: y', T0, 1],
        )
        assert.equal((await listHealthTransitions(db)).length, 1)

        // A lift that asks for a full report: the agent's report hash is forgotten.
        const lift = { from: 'failed', to: 'ok', reason: null }
        await applyHealthChange(
          db,
          'h1',
          { deviceId: id, health: 'ok', reason: null, transition: lift, forceReport: true },
          T1,
        )
        row = await db
          .selectFrom('devices')
          .selectAll()
          .where('id', '=', id)
          .executeTakeFirstOrThrow()
        assert.deepEqual([row.health, row.health_reason, row.healthy_reports], ['ok', null, 0])
        assert.equal((await listHealthTransitions(db)).length, 2)
        assert.equal(await getReportHash(db, 'h1'), null)
      } finally {
        await handle.close()
      }
    },
  )
}
