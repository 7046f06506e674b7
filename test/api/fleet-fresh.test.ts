/**
 * Capacity and explain with the default settings on every database (issue 28): the fleet read may
 * be kept (PostgreSQL: under the commit marker, src/db/reads/snapshot-marker.ts) and an answer with it
 * (src/api/v2/fleet-memo.ts), yet each change, committed by anyone (here straight SQL, as another
 * process would), shows in the very next request: a device put in maintenance, a handle taken, an
 * agent past its lease, a trait changed. The same question asked twice without a change answers
 * the same. On PostgreSQL the marker moves with a commit; elsewhere there is none.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import type { FastifyInstance } from 'fastify'
import { createApp } from '../../src/api/app.js'
import { snapshotMarker } from '../../src/db/reads/snapshot-marker.js'
import { createDeviceProfile } from '../../src/db/device-profiles.js'
import { updateHeartbeat } from '../../src/db/service-rows.js'
import { formatTimestamp } from '../../src/domain/time.js'
import { throwingConductor } from '../support/api-app.js'
import { testDialects, type TestDatabase } from '../support/db.js'
import { ingestSnapshot } from '../support/ingest.js'
import { sampleSnapshot } from '../support/sample-inventory.js'

const VERSION = { 'openstack-api-version': 'accelerator 2.6' }
type Row = { hostname: string; total: number; used: number; reserved: number; fenced: number }

for (const dialect of await testDialects()) {
  void describe(`fresh fleet reads on ${dialect.name}`, { skip: dialect.skip }, () => {
    let db: TestDatabase
    let app: FastifyInstance

    const capacity = async () => {
      const res = await app.inject({ url: '/v2/capacity?group_by=host', headers: VERSION })
      assert.equal(res.statusCode, 200, res.body)
      return (res.json() as { capacity: Row[] }).capacity
        .map((r) => `${r.hostname} u${r.used} r${r.reserved} f${r.fenced} of ${r.total}`)
        .join(', ')
    }
    const fits = async () => {
      const res = await app.inject({
        method: 'POST',
        url: '/v2/device_profiles/fresh/explain',
        headers: VERSION,
        payload: {},
      })
      assert.equal(res.statusCode, 200, res.body)
      const body = res.json() as { groups: { candidates: { hostname: string; rule: string }[] }[] }
      return body.groups[0]!.candidates.map((c) => `${c.hostname}:${c.rule}`)
        .sort()
        .join(', ')
    }
    const deviceOf = async (host: string) =>
      (
        await db.db
          .selectFrom('devices')
          .select('id')
          .where('hostname', '=', host)
          .executeTakeFirstOrThrow()
      ).id

    before(async () => {
      db = await dialect.create()
      const now = formatTimestamp(new Date())
      for (const host of ['h1', 'h2']) {
        await ingestSnapshot(db.db, sampleSnapshot(host, 1), { autoActivate: true, now })
        await updateHeartbeat(db.db, { host, binary: 'cyborg-agent', version: '1' }, now)
      }
      const traits = await db.db
        .selectFrom('attributes')
        .select('value')
        .where('key', 'like', 'trait%')
        .execute()
      await createDeviceProfile(
        db.db,
        {
          uuid: 'f7e5f7e5-0000-4000-8000-000000000028',
          name: 'fresh',
          description: null,
          groups: [{ 'trait:CUSTOM_FRESH': 'required' }],
        },
        now,
      )
      assert.ok(traits.length > 0)
      app = await createApp(
        { db: db.db, conductor: throwingConductor(), log: pino({ level: 'silent' }) },
        { serviceDownAfterMs: 60_000 },
      )
    })
    after(async () => {
      await app?.close()
      await db?.close()
    })

    it('shows each committed change in the next request, and the same answer without one', async () => {
      assert.equal(await capacity(), 'h1 u0 r0 f0 of 2, h2 u0 r0 f0 of 2')
      assert.equal(await capacity(), 'h1 u0 r0 f0 of 2, h2 u0 r0 f0 of 2')
      assert.equal(await fits(), 'h1:required_trait, h2:required_trait')

      const h1 = await deviceOf('h1')
      await db.db
        .updateTable('devices')
        .set({ status: 'maintaining' })
        .where('id', '=', h1)
        .execute()
      assert.equal(await capacity(), 'h1 u0 r2 f0 of 2, h2 u0 r0 f0 of 2')

      const h2 = await deviceOf('h2')
      const handle = await db.db
        .selectFrom('attach_handles as h')
        .innerJoin('deployables as p', 'p.id', 'h.deployable_id')
        .select('h.id')
        .where('p.device_id', '=', h2)
        .executeTakeFirstOrThrow()
      await db.db
        .updateTable('attach_handles')
        .set({ in_use: 1 })
        .where('id', '=', handle.id)
        .execute()
      assert.equal(await capacity(), 'h1 u0 r2 f0 of 2, h2 u1 r0 f0 of 2')

      await updateHeartbeat(
        db.db,
        { host: 'h2', binary: 'cyborg-agent', version: '1' },
        '2000-01-01T00:00:00.000000+00:00',
      )
      assert.equal(await capacity(), 'h1 u0 r2 f0 of 2, h2 u1 r0 f1 of 2')

      await db.db
        .updateTable('attributes')
        .set({ value: 'CUSTOM_FRESH' })
        .where('key', 'like', 'trait%')
        .where('deployable_id', 'in', (q) =>
          q.selectFrom('deployables').select('id').where('device_id', '=', h1),
        )
        .execute()
      assert.equal(await fits(), 'h1:status, h2:required_trait')
      await db.db.updateTable('devices').set({ status: 'enabled' }).where('id', '=', h1).execute()
      assert.equal(await fits(), 'h1:fits, h2:required_trait')
      assert.equal(await fits(), 'h1:fits, h2:required_trait')
    })

    it('has a commit marker that moves with a commit on PostgreSQL, none elsewhere', async () => {
      const before = await snapshotMarker(db.db)
      await updateHeartbeat(
        db.db,
        { host: 'h1', binary: 'cyborg-agent', version: '1' },
        formatTimestamp(new Date()),
      )
      const afterCommit = await snapshotMarker(db.db)
      if (dialect.name === 'postgres') {
        assert.match(before!, /^\d+:\d+:/)
        assert.notEqual(afterCommit, before)
      } else {
        assert.deepEqual([before, afterCommit], [undefined, undefined])
      }
    })
  })
}
