/**
 * The custody ledger's table and its sealer on every database: an allocation record is one INSERT that reads the
 * handle's, deployable's and device's uuids itself; sealing gives seq and hashes in order, two
 * sealers racing on two connections make one chain; lists filter by device, project, instance and
 * time and page; pruning leaves a signed checkpoint the remaining chain verifies from.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { generateKeyPairSync } from 'node:crypto'
import { testDialects, type TestDatabase } from '../../../test/support/db.js'
import { ingestSnapshot } from '../../../test/support/ingest.js'
import { sampleSnapshot } from '../../../test/support/sample-inventory.js'
import { createCustodySealer } from './custody-sealer.js'
import type { Arq } from '../../domain/arq.js'
import { createCustodyVerifier } from '../../domain/custody/custody-verify.js'
import { noopLogger } from '../../domain/logger.js'
import { openDatabase, type DatabaseHandle } from '../../db/core/connection.js'
import { appendAllocationRecords } from '../../db/custody.js'
import { getLatestCheckpoint } from '../../db/reads/custody-rows.js'
import { streamSealedCustody } from '../../db/reads/custody-walk.js'
import { getCustody, listCustody } from '../../db/reads/custody-reads.js'
import { listAttachHandles } from '../../db/attach-handles.js'

const NOW = '2026-11-25T00:00:00.000000+00:00'
const at = (day: number, s = 0) =>
  `2026-11-${String(day).padStart(2, '0')}T00:00:${String(s).padStart(2, '0')}.000000+00:00`
const uuid = (n: number) => `c0570d10-0000-4000-8000-${String(n).padStart(12, '0')}`

function arq(n: number, handleId: number): Arq {
  return {
    id: n,
    uuid: uuid(100 + n),
    state: 'Bound',
    deviceProfileId: 1,
    deviceProfileGroupId: 0,
    projectId: `p${n % 2}`,
    hostname: 'h1',
    deviceRpUuid: null,
    instanceUuid: uuid(200 + n),
    attachHandleId: handleId,
    deployableId: null,
    createdAt: NOW,
    updatedAt: at(1),
    boundAt: at(1),
    bindId: null,
  }
}

async function verifyAll(db: DatabaseHandle) {
  const v = createCustodyVerifier({ anchor: await getLatestCheckpoint(db.db) })
  for await (const page of streamSealedCustody(db.db, 7)) if (!v.push(page)) break
  return v.result()
}

for (const dialect of await testDialects()) {
  void describe(`custody ledger on ${dialect.name}`, { skip: dialect.skip }, () => {
    let db: TestDatabase
    let handles: { id: number; uuid: string; deployableId: number }[]

    before(async () => {
      db = await dialect.create()
      await ingestSnapshot(db.db, sampleSnapshot('h1', 2, { handles: 4 }), {
        autoActivate: true,
        now: NOW,
      })
      handles = await listAttachHandles(db.db)
    })
    after(() => db.close())

    it('appends one record per interval in one statement, unsealed, with the uuids read', async () => {
      let statements = 0
      const counted = db.db.withPlugin({
        transformQuery: (args) => {
          statements++
          return args.node
        },
        transformResult: (args) => Promise.resolve(args.result),
      })
      await appendAllocationRecords(counted, [
        {
          uuid: uuid(1),
          arq: arq(1, handles[0]!.id),
          via: 'nova_v2',
          boundAt: at(1),
          releasedAt: at(2),
        },
        {
          uuid: uuid(2),
          arq: arq(2, handles[1]!.id),
          via: 'v1_attach',
          boundAt: null,
          releasedAt: at(3),
        },
      ])
      assert.equal(statements, 1)
      const r = await getCustody(db.db, uuid(1))
      assert.equal(r.seq, null)
      assert.equal(r.hash, null)
      assert.equal(r.handleUuid, handles[0]!.uuid)
      assert.ok(r.deployableUuid && r.deviceUuid, 'deployable and device uuids read')
      assert.equal(r.arqUuid, uuid(101))
      assert.equal(r.projectId, 'p1')
      assert.equal(r.instanceUuid, uuid(201))
      assert.equal(r.allocatedVia, 'nova_v2')
      assert.equal(r.boundAt, at(1))
      assert.equal(r.releasedAt, at(2))
      assert.equal((await getCustody(db.db, uuid(2))).boundAt, null)
    })

    it('seals in id order; two sealers racing make one chain', async () => {
      const second = dialect.name === 'sqlite' ? db : await openDatabase(db.url, { poolSize: 4 })
      try {
        for (let n = 3; n <= 40; n++)
          await appendAllocationRecords(db.db, [
            {
              uuid: uuid(n),
              arq: arq(n, handles[n % handles.length]!.id),
              via: 'standalone_v2',
              boundAt: at(n % 20),
              releasedAt: at(1 + (n % 20), n % 60),
            },
          ])
        const sealers = [db, second].map((h) =>
          createCustodySealer(
            { db: h, log: noopLogger, clock: { now: () => new Date() } },
            { batchSize: 3 },
          ),
        )
        const counts = await Promise.all(sealers.flatMap((s) => [s.drain(), s.drain()]))
        await Promise.all(sealers.map((s) => s.drain()))
        assert.ok(counts.reduce((a, b) => a + b, 0) <= 40)
        const first = await getCustody(db.db, uuid(1))
        assert.equal(first.seq, 1)
        const result = await verifyAll(db)
        assert.equal(result.ok, true, result.broken?.message)
        assert.equal(result.records, 40)
        await Promise.all(sealers.map((s) => s.stop()))
      } finally {
        if (second !== db) await second.close()
      }
    })

    it('lists with filters and pages', async () => {
      const all = await listCustody(db.db)
      assert.equal(all.length, 40)
      const device = all[5]!.deviceUuid!
      const byDevice = await listCustody(db.db, { deviceUuid: device })
      assert.ok(byDevice.length > 0 && byDevice.every((r) => r.deviceUuid === device))
      const p0 = await listCustody(db.db, { projectId: 'p0' })
      assert.equal(p0.length, 20)
      assert.deepEqual(
        (await listCustody(db.db, { instanceUuid: uuid(207) })).map((r) => r.uuid),
        [uuid(7)],
      )
      const window = await listCustody(db.db, { since: at(5), until: at(7) })
      assert.ok(window.length > 0)
      assert.ok(window.every((r) => r.releasedAt! >= at(5) && r.releasedAt! < at(7)))
      const page1 = await listCustody(db.db, { limit: 15 })
      const page2 = await listCustody(db.db, { limit: 15, marker: page1[14]!.uuid })
      assert.equal(page2[0]!.id, page1[14]!.id + 1)
    })

    it('prunes old records behind a signed checkpoint that the rest verifies from', async () => {
      const { privateKey } = generateKeyPairSync('ed25519')
      // Records were written at days 1..20 (created_at = released_at); keep those from day 11.
      const clock = { now: () => new Date(Date.parse('2026-11-11T00:00:00Z') + 400 * 86_400_000) }
      const sealer = createCustodySealer(
        { db, log: noopLogger, clock },
        { signingKey: privateKey, retainDays: 400 },
      )
      const before = await listCustody(db.db)
      const pruned = await sealer.prune()
      await sealer.stop()
      assert.ok(pruned > 0 && pruned < before.length, `pruned ${pruned}`)
      const after = await listCustody(db.db, { limit: 1000 })
      assert.equal(after.length, before.length - pruned + 1)
      const checkpoint = await getLatestCheckpoint(db.db)
      assert.ok(checkpoint)
      const result = await verifyAll(db)
      assert.equal(result.ok, true, result.broken?.message)
      assert.equal(result.firstSeq, pruned + 1)
      assert.equal(result.anchor?.throughSeq, pruned)
      // Deleting one more record at the start is named.
      await db.db
        .deleteFrom('custody_records')
        .where('seq', '=', pruned + 1)
        .execute()
      const broken = await verifyAll(db)
      assert.equal(broken.broken?.reason, 'missing_records')
      assert.equal(broken.broken?.seq, pruned + 2)
    })
  })
}
