import { test } from 'node:test'
import assert from 'node:assert/strict'
import { testDialects } from '../../../test/support/db.js'
import { ingestSnapshot } from '../../../test/support/ingest.js'
import { sampleSnapshot } from '../../../test/support/sample-inventory.js'
import { summarizeCapacity, type CapacityCounts } from '../../domain/capacity.js'
import { listCapacityDeployables } from './capacity.js'
import { listExplainCandidates } from './explain.js'
import { updateHeartbeat } from '../service-rows.js'

const T0 = '2026-11-25T06:00:00.000000+00:00'
const LATER = '2026-11-25T06:05:00.000000+00:00'

for (const dialect of await testDialects()) {
  await test(`capacity on ${dialect.name}`, { skip: dialect.skip }, async () => {
    const db = await dialect.create()
    try {
      // h1: a GPU and an FPGA, active; h2: one GPU with 3 handles, inactive; h3: a GPU, active.
      await ingestSnapshot(db.db, sampleSnapshot('h1', 2), { autoActivate: true, now: T0 })
      await ingestSnapshot(db.db, sampleSnapshot('h2', 1, { handles: 3 }), {
        autoActivate: false,
        now: T0,
      })
      await ingestSnapshot(db.db, sampleSnapshot('h3', 1), { autoActivate: true, now: T0 })
      const handles = await db.db
        .selectFrom('attach_handles as h')
        .innerJoin('deployables as p', 'p.id', 'h.deployable_id')
        .select(['h.id', 'p.id as deployable_id', 'p.name'])
        .orderBy('h.id')
        .execute()
      const gpu1 = handles.filter((h) => h.name === 'h1_0000:10:00.0')
      // One handle flagged in use, the other named by a (v1) request: both used.
      await db.db
        .updateTable('attach_handles')
        .set({ in_use: 1 })
        .where('id', '=', gpu1[0]!.id)
        .execute()
      await db.db
        .insertInto('accelerator_requests')
        .values({
          uuid: '00000000-0000-4000-8000-00000000ca01',
          state: 'Bound',
          device_profile_id: null,
          device_profile_group_id: 0,
          project_id: null,
          hostname: 'h1',
          device_rp_uuid: null,
          instance_uuid: null,
          attach_handle_id: gpu1[1]!.id,
          deployable_id: gpu1[1]!.deployable_id,
          created_at: T0,
          updated_at: null,
        })
        .execute()
      // h1's FPGA failed; h3's agent beat at T0 only.
      await db.db
        .updateTable('devices')
        .set({ health: 'failed' })
        .where('hostname', '=', 'h1')
        .where('type', '=', 'FPGA')
        .execute()
      await updateHeartbeat(db.db, { host: 'h3', binary: 'cyborg-agent', version: '1' }, T0)
      await updateHeartbeat(db.db, { host: 'h1', binary: 'cyborg-agent', version: '1' }, LATER)

      const all = await listCapacityDeployables(db.db)
      assert.deepEqual(
        all.map((d) => [d.hostname, d.deviceType, d.resourceClass, d.traits, d.handles, d.used]),
        [
          ['h1', 'GPU', 'PGPU', ['CUSTOM_GPU_NVIDIA'], 2, 2],
          ['h1', 'FPGA', 'FPGA', ['CUSTOM_FPGA_INTEL'], 2, 0],
          ['h2', 'GPU', 'PGPU', ['CUSTOM_GPU_NVIDIA'], 3, 0],
          ['h3', 'GPU', 'PGPU', ['CUSTOM_GPU_NVIDIA'], 2, 0],
        ],
      )
      assert.deepEqual(
        all.map((d) => d.agentLastSeen),
        [LATER, LATER, null, T0],
      )

      const counts = (r: CapacityCounts) => [r.total, r.used, r.reserved, r.fenced, r.free]
      const rows = summarizeCapacity(all, { leaseCutoff: '2026-11-25T06:01:00.000000+00:00' })
      assert.deepEqual(
        rows.map((r) => [r.resourceClass, r.hostname, r.traits, ...counts(r)]),
        [
          ['FPGA', 'h1', ['CUSTOM_FPGA_INTEL'], 2, 0, 0, 2, 0],
          ['PGPU', 'h1', ['CUSTOM_GPU_NVIDIA'], 2, 2, 0, 0, 0],
          ['PGPU', 'h2', ['CUSTOM_GPU_NVIDIA'], 3, 0, 3, 0, 0],
          ['PGPU', 'h3', ['CUSTOM_GPU_NVIDIA'], 2, 0, 0, 2, 0],
        ],
      )
      // Before h3's lease ran out, its GPU is free.
      const early = summarizeCapacity(all, { leaseCutoff: T0, groupBy: 'resource_class' })
      assert.deepEqual(
        early.map((r) => [r.resourceClass, r.hostname, ...counts(r)]),
        [
          ['FPGA', null, 2, 0, 0, 2, 0],
          ['PGPU', null, 7, 2, 3, 0, 2],
        ],
      )

      const h2 = await listCapacityDeployables(db.db, 'h2')
      assert.deepEqual(
        h2.map((d) => [d.hostname, d.handles]),
        [['h2', 3]],
      )
      assert.deepEqual(await listCapacityDeployables(db.db, 'nowhere'), [])
    } finally {
      await db.close()
    }
  })
}

/** Capacity's deployables as first derived from explain's candidates (the reference). */
async function viaExplain(db: Parameters<typeof listExplainCandidates>[0], hostname?: string) {
  return (await listExplainCandidates(db, hostname)).map((r) => {
    let resourceClass: string | null = null
    const traits = new Set<string>()
    for (const a of r.attributes) {
      if (a.key === 'rc') resourceClass = a.value
      else if (a.key.startsWith('trait')) traits.add(a.value)
    }
    return {
      hostname: r.hostname,
      deviceType: r.deviceType,
      resourceClass,
      traits: [...traits].sort(),
      lifecycle: r.lifecycle,
      status: r.status,
      health: r.health,
      removalPending: r.removalPending,
      agentLastSeen: r.agentLastSeen,
      handles: r.handles.total,
      used: r.handles.total - r.handles.free - r.handles.cleaning,
      cleaning: r.handles.cleaning,
    }
  })
}

for (const dialect of await testDialects()) {
  await test(
    `capacity reads what explain reads, on ${dialect.name}`,
    { skip: dialect.skip },
    async () => {
      const db = await dialect.create()
      try {
        await ingestSnapshot(db.db, sampleSnapshot('h2', 3), { autoActivate: true, now: T0 })
        await ingestSnapshot(db.db, sampleSnapshot('h1', 2, { handles: 1 }), {
          autoActivate: false,
          now: T0,
        })
        await updateHeartbeat(db.db, { host: 'h2', binary: 'cyborg-agent', version: '1' }, T0)
        const ps = await db.db.selectFrom('deployables').select('id').orderBy('id').execute()
        const [p0, p1, p2] = ps.map((p) => p.id)
        let n = 0
        const attr = (deployable_id: number, key: string, value: string) => ({
          uuid: `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`,
          deployable_id,
          key,
          value,
          created_at: T0,
          updated_at: null,
        })
        // Keys only near `rc` and `trait*` (case, a trailing space, a prefix), a duplicate trait
        // value, traits out of order, and a deployable with no rc and no attach handle.
        await db.db.deleteFrom('attributes').where('deployable_id', '=', p1!).execute()
        await db.db
          .insertInto('attributes')
          .values([
            attr(p0!, 'TRAIT9', 'CUSTOM_UPPER'),
            attr(p0!, 'trait5', 'CUSTOM_GPU_NVIDIA'),
            attr(p0!, 'traitZ', 'CUSTOM_AAA'),
            attr(p0!, 'xtrait', 'CUSTOM_X'),
            attr(p0!, 'rcx', 'NOT_RC'),
            attr(p1!, 'rc ', 'NOT_RC'),
            attr(p1!, 'RC', 'NOT_RC'),
            attr(p1!, 'trait', 'CUSTOM_BARE'),
          ])
          .execute()
        const handles = await db.db
          .selectFrom('attach_handles')
          .select('id')
          .where('deployable_id', '=', p2!)
          .execute()
        await db.db
          .updateTable('attach_handles')
          .set({ in_use: 1 })
          .where('id', '=', handles[0]!.id)
          .execute()
        const h1 = await db.db
          .selectFrom('attach_handles as h')
          .innerJoin('deployables as p', 'p.id', 'h.deployable_id')
          .innerJoin('devices as d', 'd.id', 'p.device_id')
          .select('h.id')
          .where('d.hostname', '=', 'h1')
          .execute()
        await db.db
          .deleteFrom('attach_handles')
          .where(
            'id',
            'in',
            h1.map((h) => h.id),
          )
          .execute()

        // A released unit waiting for its clean is in use, counted as cleaning, not used.
        await db.db
          .updateTable('attach_handles')
          .set({ in_use: 1, clean_state: 'pending' })
          .where('id', '=', handles[1]!.id)
          .execute()

        const all = await listCapacityDeployables(db.db)
        assert.deepStrictEqual(all, await viaExplain(db.db))
        assert.deepEqual(
          all.map((d) => [d.hostname, d.resourceClass, d.traits, d.handles, d.used, d.cleaning]),
          [
            ['h1', 'PGPU', ['CUSTOM_GPU_NVIDIA'], 0, 0, 0],
            ['h1', 'FPGA', ['CUSTOM_FPGA_INTEL'], 0, 0, 0],
            ['h2', 'PGPU', ['CUSTOM_AAA', 'CUSTOM_GPU_NVIDIA'], 2, 0, 0],
            ['h2', null, ['CUSTOM_BARE'], 2, 0, 0],
            ['h2', 'PGPU', ['CUSTOM_GPU_NVIDIA'], 2, 1, 1],
          ],
        )
        for (const host of ['h1', 'h2', 'nowhere'])
          assert.deepStrictEqual(
            await listCapacityDeployables(db.db, host),
            await viaExplain(db.db, host),
          )
      } finally {
        await db.close()
      }
    },
  )
}
