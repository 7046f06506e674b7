/**
 * The custody ledger through the conductor over the in-process bus, on every database (a core
 * with the fake driver's agent on node1, Nova's side stubbed): each release path closes one
 * allocation interval with one record (v2 unbind, v2 delete of a bound request, Nova deleting an
 * instance's requests, v1 detach); a request that never got bound leaves none; each interval's unit
 * is cleaned by the fake driver, with its clean record; the sealed chain verifies.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import { getLatestCheckpoint } from '../../src/db/reads/custody-rows.js'
import { streamSealedCustody } from '../../src/db/reads/custody-walk.js'
import { listCustody } from '../../src/db/reads/custody-reads.js'
import { createCustodyVerifier } from '../../src/domain/custody/custody-verify.js'
import { noopLogger } from '../../src/domain/logger.js'
import { startCore, type Core } from '../../src/main/core.js'
import type { NovaClient } from '../../src/openstack/nova.js'
import { testDialects, type TestDatabase } from '../support/db.js'

const INSTANCE = (n: number) => `c0570d1e-0000-4000-8000-${String(n).padStart(12, '0')}`

/** Nova's side: every accelerator-request-bound event accepted. */
const nova = {
  sendArqBoundEvents: () => Promise.resolve({ ok: true, results: [] }),
} as unknown as NovaClient

for (const dialect of await testDialects()) {
  void describe(
    `custody records of each release path on ${dialect.name}`,
    { skip: dialect.skip },
    () => {
      let db: TestDatabase
      let core: Core
      let rpUuid: string
      let deployableUuid: string

      const bound = async (instance: number) => {
        const c = core.conductorClient
        const [arq] = await c.createArqs({ deviceProfileName: 'one', projectId: 'p1', maxArqs: 8 })
        const [out] = await c.bindArqs({
          bindings: {
            [arq!.uuid]: {
              hostname: 'node1',
              deviceRpUuid: rpUuid,
              instanceUuid: INSTANCE(instance),
            },
          },
        })
        assert.equal(out!.state, 'Bound')
        return arq!.uuid
      }
      const recordsOf = async (arqUuid: string) =>
        (await listCustody(db.db)).filter((r) => r.arqUuid === arqUuid)

      before(async () => {
        db = await dialect.create()
        core = await startCore({
          db,
          bus: createInProcessBus(),
          log: noopLogger,
          nova,
          conductor: { reapIntervalMs: 0 },
          agent: {
            host: 'node1',
            enabledDrivers: ['fake'],
            autoActivate: true,
            periodicIntervalMs: 3_600_000,
          },
        })
        await core.agent!.discoverNow()
        const row = await db.db
          .selectFrom('deployables')
          .select(['uuid', 'rp_uuid'])
          .executeTakeFirstOrThrow()
        rpUuid = row.rp_uuid!
        deployableUuid = row.uuid
        await core.conductorClient.createDeviceProfile({
          name: 'one',
          description: null,
          groups: [{ 'resources:FPGA': '1' }],
        })
      })
      after(async () => {
        await core?.stop()
        await db?.close()
      })

      it('v2 unbind closes the interval', async () => {
        const arq = await bound(1)
        const [boundRow] = await db.db
          .selectFrom('accelerator_requests')
          .select(['updated_at'])
          .where('uuid', '=', arq)
          .execute()
        await core.conductorClient.unbindArqs({ uuids: [arq] })
        const [r, more] = await recordsOf(arq)
        assert.ok(r && !more, 'one record')
        assert.equal(r.kind, 'allocation')
        assert.equal(r.allocatedVia, 'nova_v2')
        assert.equal(r.projectId, 'p1')
        assert.equal(r.instanceUuid, INSTANCE(1))
        assert.equal(r.hostname, 'node1')
        assert.equal(r.deployableUuid, deployableUuid)
        assert.ok(r.deviceUuid && r.handleUuid)
        assert.equal(r.boundAt, boundRow!.updated_at)
        assert.ok(r.releasedAt && r.releasedAt >= r.boundAt!)
        // Unbinding again closes nothing more.
        await core.conductorClient.unbindArqs({ uuids: [arq] })
        assert.equal((await recordsOf(arq)).length, 1)
      })

      it('v2 delete of a bound request closes the interval; one never bound leaves none', async () => {
        const arq = await bound(2)
        await core.conductorClient.deleteArqs({ uuids: [arq] })
        assert.equal((await recordsOf(arq)).length, 1)
        const [idle] = await core.conductorClient.createArqs({
          deviceProfileName: 'one',
          projectId: 'p1',
          maxArqs: 8,
        })
        await core.conductorClient.deleteArqs({ uuids: [idle!.uuid] })
        assert.equal((await recordsOf(idle!.uuid)).length, 0)
      })

      it("Nova deleting the instance's requests closes the interval", async () => {
        const arq = await bound(3)
        await core.conductorClient.deleteArqs({ instanceUuid: INSTANCE(3) })
        const [r] = await recordsOf(arq)
        assert.equal(r?.instanceUuid, INSTANCE(3))
      })

      it("an interval's bound_at is when its bind committed, not a later change", async () => {
        const arq = await bound(5)
        const row = () =>
          db.db
            .selectFrom('accelerator_requests')
            .select(['updated_at', 'created_at'])
            .where('uuid', '=', arq)
            .executeTakeFirstOrThrow()
        const bindTime = (await row()).updated_at
        // A later change moves updated_at (here the delete's own Deleting step, as in issue 27).
        await new Promise((r) => setTimeout(r, 20))
        await core.conductorClient.deleteArqs({ uuids: [arq] })
        const [r] = await recordsOf(arq)
        assert.equal(r?.boundAt, bindTime)
        assert.ok(r.releasedAt! > r.boundAt!)

        // A v1 attach is bound when it is written: its interval starts then.
        await core.conductorClient.attachAccelerator({
          uuid: deployableUuid,
          target: { instanceUuid: INSTANCE(6) },
        })
        const [attached] = await db.db
          .selectFrom('accelerator_requests')
          .select(['uuid', 'created_at'])
          .where('instance_uuid', '=', INSTANCE(6))
          .execute()
        await new Promise((r) => setTimeout(r, 20))
        await core.conductorClient.detachAccelerator({ uuid: deployableUuid })
        const [v1] = await recordsOf(attached!.uuid)
        assert.equal(v1?.boundAt, attached!.created_at)
      })

      it('v1 detach closes the interval', async () => {
        await core.conductorClient.attachAccelerator({
          uuid: deployableUuid,
          target: { instanceUuid: INSTANCE(4) },
        })
        await core.conductorClient.detachAccelerator({ uuid: deployableUuid })
        const records = (await listCustody(db.db)).filter((r) => r.instanceUuid === INSTANCE(4))
        assert.equal(records.length, 1)
        assert.equal(records[0]!.allocatedVia, 'v1_attach')
        assert.equal(records[0]!.deployableUuid, deployableUuid)
      })

      it('each interval is followed by the clean of its unit; the sealed chain verifies', async () => {
        await core.conductor!.cleaningIdle()
        await core.conductor!.drainCustody()
        const all = await listCustody(db.db)
        const intervals = all.filter((r) => r.kind === 'allocation')
        assert.equal(intervals.length, 6)
        for (const interval of intervals) {
          const clean = all.find((r) => r.kind === 'clean' && r.allocationUuid === interval.uuid)
          assert.equal(clean?.cleanResult, 'ok', `interval ${interval.uuid} has its clean`)
          assert.equal(clean.cleanMethod, 'fake')
          assert.equal(clean.handleUuid, interval.handleUuid)
          assert.match(clean.cleanEvidenceSha256 ?? '', /^[0-9a-f]{64}$/)
        }
        assert.equal(all.length, 12)
        assert.ok(all.every((r) => r.seq !== null && r.hash !== null))
        const v = createCustodyVerifier({ anchor: await getLatestCheckpoint(db.db) })
        for await (const page of streamSealedCustody(db.db)) v.push(page)
        const result = v.result()
        assert.equal(result.ok, true, result.broken?.message)
        assert.equal(result.records, 12)
      })
    },
  )
}
