/**
 * Agent leases on every database: two conductors sweeping at once fence a silent agent's devices
 * once, with the agent named; a live agent's stay offered; a claim refuses the silent host in its
 * own transaction, even before a sweep; the agent's next full report lifts the fence.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createGroupCommitter } from '../db/core/group-commit.js'
import { openDatabase } from '../db/core/connection.js'
import { listDevicesByHost } from '../db/reads/device-reads.js'
import { listHealthTransitions } from '../db/health-transitions.js'
import { getReportHash, updateHeartbeat, updateReportHash } from '../db/service-rows.js'
import { createArqs, getArq, updateArqStates } from '../db/arqs.js'
import { createDeviceProfile } from '../db/device-profiles.js'
import { noopLogger } from '../domain/logger.js'
import { testDialects } from '../../test/support/db.js'
import { ingestSnapshot } from '../../test/support/ingest.js'
import { sampleSnapshot } from '../../test/support/sample-inventory.js'
import { claimHandleForArq } from './arq/arq-claim.js'
import { leaseCutoff, sweepLeases } from './lease-sweep.js'
import { createConductor } from './conductor.js'
import { inventoryHash } from '../rpc/inventory-hash.js'

const T0 = '2026-11-25T06:00:00.000000+00:00'
const T1 = '2026-11-25T06:01:30.000000+00:00'
const DOWN_MS = 60_000
/** 06:02:00: h1 last beat at 06:00 (down), h2 at 06:01:30 (up). */
const clock = { now: () => new Date('2026-11-25T06:02:00Z') }

for (const dialect of await testDialects()) {
  await test(`agent leases on ${dialect.name}`, { skip: dialect.skip }, async () => {
    const db = await dialect.create()
    // SQLite's test database lives in this process only: there both sweeps share the handle.
    const second = dialect.name === 'sqlite' ? db : await openDatabase(db.url)
    const committers = [db, second].map((h) =>
      createGroupCommitter(h, { intervalMs: 0, maxBatch: 8 }),
    )
    const synced: string[] = []
    try {
      for (const [host, beat] of [
        ['h1', T0],
        ['h2', T1],
      ] as const) {
        const snapshot = sampleSnapshot(host, 2)
        await ingestSnapshot(db.db, snapshot, { autoActivate: true, now: T0 })
        await updateReportHash(db.db, host, snapshot.hash, T0)
        await updateHeartbeat(db.db, { host, binary: 'cyborg-agent', version: '1' }, beat)
      }
      const groups = [{ 'resources:PGPU': '1' }]
      const profile = {
        uuid: '00000000-0000-4000-8000-0000000000d1',
        name: 'dp',
        description: null,
        groups,
      }
      const { id: profileId } = await createDeviceProfile(db.db, profile, T0)
      const [arq] = await createArqs(
        db.db,
        { profileId, specs: [{ groupId: 0 }], projectId: null },
        { now: T0 },
      )
      const binding = { hostname: 'h1', instanceUuid: '00000000-0000-4000-8000-000000000001' }
      await updateArqStates(db.db, [arq!.uuid], 'BindStarted', { now: T0, set: binding })

      // The claim checks the lease itself: refused before any sweep fenced anything.
      const cutoff = leaseCutoff(clock, DOWN_MS)
      const refused = await claimHandleForArq(db.db, binding, undefined, T1, cutoff)
      assert.deepEqual(refused, { reason: `agent cyborg-agent@h1 silent since ${T0}` })
      assert.equal((await getArq(db.db, arq!.uuid)).attachHandleId, null)

      const deps = (i: number) => ({
        db: [db, second][i]!,
        committer: committers[i]!,
        log: noopLogger,
        clock,
        syncPlacement: async (host: string) => void synced.push(host),
      })
      const fenced = await Promise.all([
        sweepLeases(deps(0), DOWN_MS),
        sweepLeases(deps(1), DOWN_MS),
      ])
      assert.deepEqual(fenced.flat(), ['h1'], 'one conductor fences h1, once')
      assert.deepEqual(synced, ['h1'])
      const h1 = await listDevicesByHost(db.db, 'h1')
      const rows = await db.db
        .selectFrom('devices')
        .select(['hostname', 'health', 'health_reason'])
        .orderBy('id')
        .execute()
      assert.deepEqual(
        rows.map((r) => [r.hostname, r.health, r.health_reason]),
        [
          ['h1', 'unknown', `agent cyborg-agent@h1 silent since ${T0}`],
          ['h1', 'unknown', `agent cyborg-agent@h1 silent since ${T0}`],
          ['h2', 'ok', null],
          ['h2', 'ok', null],
        ],
      )
      assert.equal(h1.length, 2)
      const recorded = await listHealthTransitions(db.db)
      assert.deepEqual(
        recorded.map((t) => [t.deviceUuid, t.from, t.to, t.reason]),
        h1.map((d) => [d.uuid, 'ok', 'unknown', `agent cyborg-agent@h1 silent since ${T0}`]),
        'each fenced device has one recorded transition',
      )
      assert.equal(await getReportHash(db.db, 'h1'), null, 'the next report is diffed in full')
      assert.deepEqual(await sweepLeases(deps(0), DOWN_MS), [], 'idempotent: nothing left to fence')

      // The agent is back: a heartbeat alone lifts nothing; its full report does.
      await updateHeartbeat(
        db.db,
        { host: 'h1', binary: 'cyborg-agent', version: '1' },
        '2026-11-25T06:02:00.000000+00:00',
      )
      assert.ok((await listDevicesByHost(db.db, 'h1')).every((d) => d.health === 'unknown'))
      await ingestSnapshot(db.db, sampleSnapshot('h1', 2), { autoActivate: true, now: T1 })
      const back = await db.db
        .selectFrom('devices')
        .select(['health', 'health_reason'])
        .where('hostname', '=', 'h1')
        .execute()
      assert.deepEqual(back, [
        { health: 'ok', health_reason: null },
        { health: 'ok', health_reason: null },
      ])
    } finally {
      for (const c of committers) await c.close()
      if (second !== db) await second.close()
      await db.close()
    }
  })
}

await test('the conductor refuses binds and v1 attaches on a host whose agent is past its lease', async () => {
  const [sqlite] = await testDialects()
  const db = await sqlite!.create()
  let now = new Date('2026-11-25T06:00:00Z')
  const conductor = createConductor(
    { db, log: noopLogger, clock: { now: () => now } },
    { saveIntervalMs: 0, serviceDownTimeMs: DOWN_MS, reapIntervalMs: 0 },
  )
  try {
    const devices = sampleSnapshot('h1', 1, { handles: 2, attachType: 'TEST_PCI' }).devices
    const report = { host: 'h1', hash: inventoryHash(devices), devices, autoActivate: true }
    await conductor.reportInventory(report)
    const groups = [{ 'resources:PGPU': '1' }]
    await conductor.createDeviceProfile({ name: 'dp', description: null, groups })
    const ask = { deviceProfileName: 'dp', projectId: null, maxArqs: 8 }
    const [ok, late] = [...(await conductor.createArqs(ask)), ...(await conductor.createArqs(ask))]
    const bind = (uuid: string, instance: string) =>
      conductor.bindArqs({ bindings: { [uuid]: { hostname: 'h1', instanceUuid: instance } } })
    const [bound] = await bind(ok!.uuid, '00000000-0000-4000-8000-000000000001')
    assert.equal(bound?.state, 'Bound', 'within the lease')

    now = new Date('2026-11-25T06:01:01Z') // the report was the last sign of life, 61 s ago
    const [failed] = await bind(late!.uuid, '00000000-0000-4000-8000-000000000002')
    const reason = `agent cyborg-agent@h1 silent since 2026-11-25T06:00:00.000000+00:00`
    assert.deepEqual(failed, { uuid: late!.uuid, state: 'BindFailed', reason })
    const [deployable] = await db.db.selectFrom('deployables').select('uuid').execute()
    const target = { hostname: 'h1' }
    await assert.rejects(conductor.attachAccelerator({ uuid: deployable!.uuid, target }), {
      name: 'ConflictError',
      code: 'AGENT_SILENT',
      message: `accelerator ${deployable!.uuid} cannot be attached: ${reason}`,
    })
  } finally {
    await conductor.stop()
    await db.close()
  }
})
