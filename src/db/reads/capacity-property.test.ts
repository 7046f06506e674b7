/**
 * The capacity identity as a property, on SQLite: after random operations (hosts reported, handles
 * bound and unbound by flag or by request, devices disabled, failed or pending removal, agents
 * beating before or after the lease cut-off), every row of every grouping has
 * `total = used + reserved + fenced + cleaning + free` with no negative count, and the rows add up
 * to the fleet's handles and the handles in use.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { testDialects } from '../../../test/support/db.js'
import { ingestSnapshot } from '../../../test/support/ingest.js'
import { sampleSnapshot } from '../../../test/support/sample-inventory.js'
import { CAPACITY_GROUP_BY, summarizeCapacity } from '../../domain/capacity.js'
import type { Database } from '../core/schema.js'
import { listCapacityDeployables } from './capacity.js'
import { updateHeartbeat } from '../service-rows.js'

const T0 = '2026-11-25T06:00:00.000000+00:00'
const CUTOFF = '2026-11-25T06:01:00.000000+00:00'
const LATER = '2026-11-25T06:02:00.000000+00:00'

const host = fc.integer({ min: 0, max: 3 }).map((n) => `h${n}`)
const pick = fc.nat({ max: 50 })
const op = fc.oneof(
  fc.record({
    kind: fc.constant('ingest' as const),
    host,
    count: fc.integer({ min: 1, max: 3 }),
    handles: fc.integer({ min: 1, max: 3 }),
    active: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('flag' as const), i: pick, inUse: fc.boolean() }),
  fc.record({ kind: fc.constant('hold' as const), i: pick }),
  fc.record({ kind: fc.constant('release' as const), i: pick }),
  fc.record({
    kind: fc.constant('device' as const),
    i: pick,
    column: fc.constantFrom('status', 'health', 'lifecycle'),
    value: fc.constantFrom('maintaining', 'enabled', 'failed', 'unknown', 'ok', 'inactive'),
  }),
  fc.record({ kind: fc.constant('removal' as const), i: pick }),
  fc.record({ kind: fc.constant('beat' as const), host, late: fc.boolean() }),
)
type Op = typeof op extends fc.Arbitrary<infer T> ? T : never

const ids = async (db: Kysely<Database>, table: 'attach_handles' | 'devices' | 'deployables') =>
  (await db.selectFrom(table).select('id').orderBy('id').execute()).map((r) => r.id)

async function apply(db: Kysely<Database>, o: Op, n: number): Promise<void> {
  switch (o.kind) {
    case 'ingest': {
      const snapshot = sampleSnapshot(o.host, o.count, { handles: o.handles })
      await ingestSnapshot(db, snapshot, { autoActivate: o.active, now: T0 })
      return
    }
    case 'flag': {
      const h = await ids(db, 'attach_handles')
      if (h.length === 0) return
      const id = h[o.i % h.length]!
      await db
        .updateTable('attach_handles')
        .set({ in_use: o.inUse ? 1 : 0 })
        .where('id', '=', id)
        .execute()
      return
    }
    case 'hold': {
      const free = await db
        .selectFrom('attach_handles as h')
        .leftJoin('accelerator_requests as a', 'a.attach_handle_id', 'h.id')
        .select(['h.id', 'h.deployable_id'])
        .where('a.id', 'is', null)
        .orderBy('h.id')
        .execute()
      const h = free[o.i % Math.max(1, free.length)]
      if (!h) return
      const uuid = `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`
      await db
        .insertInto('accelerator_requests')
        .values({
          uuid,
          state: 'Bound',
          device_profile_id: null,
          device_profile_group_id: 0,
          project_id: null,
          hostname: null,
          device_rp_uuid: null,
          instance_uuid: null,
          attach_handle_id: h.id,
          deployable_id: h.deployable_id,
          created_at: T0,
          updated_at: null,
        })
        .execute()
      return
    }
    case 'release': {
      const held = await db.selectFrom('accelerator_requests').select('id').orderBy('id').execute()
      const a = held[o.i % Math.max(1, held.length)]
      if (a) await db.deleteFrom('accelerator_requests').where('id', '=', a.id).execute()
      return
    }
    case 'device': {
      const d = await ids(db, 'devices')
      if (d.length === 0) return
      await db
        .updateTable('devices')
        .set({ [o.column]: o.value })
        .where('id', '=', d[o.i % d.length]!)
        .execute()
      return
    }
    case 'removal': {
      const p = await ids(db, 'deployables')
      if (p.length === 0) return
      await db
        .updateTable('deployables')
        .set({ removal_pending: 1 })
        .where('id', '=', p[o.i % p.length]!)
        .execute()
      return
    }
    case 'beat':
      await updateHeartbeat(
        db,
        { host: o.host, binary: 'cyborg-agent', version: '1' },
        o.late ? LATER : T0,
      )
      return
  }
}

const [sqlite] = await testDialects()

/** A run that reaches every bucket, tried before the random ones (a random 30 may miss one). */
const EVERY_BUCKET: Op[] = [
  { kind: 'ingest', host: 'h0', count: 3, handles: 2, active: true },
  { kind: 'ingest', host: 'h1', count: 1, handles: 2, active: false },
  { kind: 'hold', i: 0 },
  { kind: 'device', i: 1, column: 'health', value: 'failed' },
]

void test('capacity: total = used + reserved + fenced + cleaning + free, after any operations', async () => {
  const seen = new Set<string>()
  await fc.assert(
    fc.asyncProperty(fc.array(op, { maxLength: 25 }), async (ops) => {
      const db = await sqlite!.create()
      try {
        for (const [n, o] of ops.entries()) await apply(db.db, o, n)
        const handles = await db.db
          .selectFrom('attach_handles as h')
          .leftJoin('accelerator_requests as a', 'a.attach_handle_id', 'h.id')
          .select([
            sql<number>`count(*)`.as('total'),
            sql<number>`sum(case when h.in_use = 1 or a.id is not null then 1 else 0 end)`.as(
              'used',
            ),
          ])
          .executeTakeFirstOrThrow()
        const deployables = await listCapacityDeployables(db.db)
        for (const groupBy of [undefined, ...CAPACITY_GROUP_BY]) {
          const rows = summarizeCapacity(deployables, { groupBy, leaseCutoff: CUTOFF })
          for (const r of rows) {
            for (const c of [r.total, r.used, r.reserved, r.fenced, r.cleaning, r.free])
              assert.ok(Number.isInteger(c) && c >= 0, JSON.stringify(r))
            assert.equal(r.total, r.used + r.reserved + r.fenced + r.cleaning + r.free)
            assert.equal(r.cleaning, 0)
            for (const k of ['used', 'reserved', 'fenced', 'free'] as const)
              if (r[k] > 0) seen.add(k)
          }
          const sum = (k: 'total' | 'used') => rows.reduce((a, r) => a + r[k], 0)
          assert.equal(sum('total'), Number(handles.total))
          assert.equal(sum('used'), Number(handles.used ?? 0))
        }
      } finally {
        await db.close()
      }
    }),
    { numRuns: 30, examples: [[EVERY_BUCKET]] },
  )
  // The runs reached every bucket, so the identity was not checked on empty fleets only.
  assert.deepEqual([...seen].sort(), ['fenced', 'free', 'reserved', 'used'])
})
