/**
 * v1 attach, detach and acc_specs through two conductors on one database, on every dialect:
 * racing attaches of one accelerator (exactly one wins), a v1 attach blocking a v2 bind and the
 * reverse, attach against detach leaking no handle, and a stale If-Match losing.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createConductor, type Conductor } from '../../src/conductor/conductor.js'
import { openDatabase, type DatabaseHandle } from '../../src/db/core/connection.js'
import { testDialects, type TestDatabase } from '../support/db.js'
import { accSpecsEtag } from '../../src/domain/v1-accelerator.js'
import { DriverError } from '../../src/domain/errors.js'
import { noopLogger } from '../../src/domain/logger.js'
import { inventoryHash } from '../../src/rpc/inventory-hash.js'
import { STORM_HOST as HOST, stormDevices } from '../support/storm-inventory.js'

const clock = { now: () => new Date() }
const vm = (n: number) => `7e570000-0000-4000-8000-${String(n).padStart(12, '0')}`

for (const dialect of await testDialects()) {
  void describe(
    `v1 attach and detach, two conductors on ${dialect.name}`,
    { skip: dialect.skip, timeout: 120_000 },
    () => {
      let db: TestDatabase
      let second: DatabaseHandle
      let conductors: Conductor[]
      let accs: { uuid: string; rp_uuid: string | null }[]

      /** Handles in use, and handles named by a request: equal when nothing leaked or is shared. */
      const handleBooks = async () => {
        const inUse = await db.db
          .selectFrom('attach_handles')
          .select('id')
          .where('in_use', '=', 1)
          .orderBy('id')
          .execute()
        const named = await db.db
          .selectFrom('accelerator_requests')
          .select('attach_handle_id')
          .where('attach_handle_id', 'is not', null)
          .orderBy('attach_handle_id')
          .execute()
        return { inUse: inUse.map((r) => r.id), named: named.map((r) => r.attach_handle_id) }
      }

      before(async () => {
        db = await dialect.create()
        second = dialect.name === 'sqlite' ? db : await openDatabase(db.url, { poolSize: 8 })
        conductors = [db, second].map((h) =>
          createConductor(
            { db: h, log: noopLogger, clock },
            { saveIntervalMs: 1, reapIntervalMs: 0 },
          ),
        )
        const list = stormDevices(8, 1) // 8 accelerators of one TEST_PCI handle each
        await conductors[0]!.reportInventory({
          host: HOST,
          hash: inventoryHash(list),
          devices: list,
          autoActivate: true,
        })
        await conductors[0]!.createDeviceProfile({
          name: 'one',
          description: null,
          groups: [{ 'resources:FPGA': '1' }],
        })
        accs = await db.db
          .selectFrom('deployables')
          .select(['uuid', 'rp_uuid'])
          .orderBy('id')
          .execute()
      })
      after(async () => {
        for (const c of conductors ?? []) await c.stop()
        if (second !== db) await second?.close()
        await db?.close()
      })

      void it('attaches racing for one accelerator: exactly one wins, the rest are 409 ACCELERATOR_IN_USE', async () => {
        const uuid = accs[0]!.uuid
        const settled = await Promise.allSettled(
          Array.from({ length: 20 }, (_, i) =>
            conductors[i % 2]!.attachAccelerator({ uuid, target: { instanceUuid: vm(i) } }),
          ),
        )
        const won = settled.filter((s) => s.status === 'fulfilled')
        assert.equal(won.length, 1, 'exactly one attach goes through')
        for (const s of settled)
          if (s.status === 'rejected')
            assert.equal(s.reason.code, 'ACCELERATOR_IN_USE', String(s.reason))
        const books = await handleBooks()
        assert.equal(books.inUse.length, 1)
        assert.deepEqual(books.inUse, books.named)
        // The same attach again is a no-op; detach frees the unit.
        const winner = settled.findIndex((s) => s.status === 'fulfilled')
        const again = await conductors[1]!.attachAccelerator({
          uuid,
          target: { instanceUuid: vm(winner) },
        })
        assert.equal(again.changed, false)
        assert.equal((await conductors[0]!.detachAccelerator({ uuid })).detached.length, 1)
        assert.deepEqual(await handleBooks(), { inUse: [], named: [] })
      })

      void it('a v1 attach blocks a v2 bind of the same accelerator, until it is detached', async () => {
        const { uuid, rp_uuid: rp } = accs[1]!
        await conductors[0]!.attachAccelerator({ uuid, target: { hostname: HOST } })
        const [arq] = await conductors[0]!.createArqs({
          deviceProfileName: 'one',
          projectId: null,
          maxArqs: 8,
        })
        const [outcome] = await conductors[1]!.bindArqs({
          bindings: { [arq!.uuid]: { hostname: HOST, deviceRpUuid: rp!, instanceUuid: vm(100) } },
        })
        assert.equal(outcome!.state, 'BindFailed')
        await conductors[1]!.detachAccelerator({ uuid })
        await conductors[0]!.unbindArqs({ uuids: [arq!.uuid] }).catch(() => undefined)
        const [retry] = await conductors[1]!.bindArqs({
          bindings: { [arq!.uuid]: { hostname: HOST, deviceRpUuid: rp!, instanceUuid: vm(100) } },
        })
        assert.equal(retry!.state, 'Bound')
        await conductors[0]!.deleteArqs({ uuids: [arq!.uuid] })
      })

      void it('a v2 bind blocks a v1 attach (409) and a v1 detach (409 ACCELERATOR_HELD)', async () => {
        const { uuid, rp_uuid: rp } = accs[2]!
        const [arq] = await conductors[0]!.createArqs({
          deviceProfileName: 'one',
          projectId: null,
          maxArqs: 8,
        })
        const [outcome] = await conductors[0]!.bindArqs({
          bindings: { [arq!.uuid]: { hostname: HOST, deviceRpUuid: rp!, instanceUuid: vm(200) } },
        })
        assert.equal(outcome!.state, 'Bound')
        await assert.rejects(
          conductors[1]!.attachAccelerator({ uuid, target: { instanceUuid: vm(201) } }),
          (err: { code?: string; message: string }) => {
            assert.equal(err.code, 'ACCELERATOR_IN_USE')
            assert.match(err.message, new RegExp(`instance ${vm(200)}`))
            return true
          },
        )
        await assert.rejects(conductors[1]!.detachAccelerator({ uuid }), {
          code: 'ACCELERATOR_HELD',
        })
        // v2 does not see a v1 attachment by uuid; a delete by instance takes both kinds.
        await conductors[0]!.deleteArqs({ instanceUuid: vm(200) })
        const attached = await conductors[1]!.attachAccelerator({
          uuid,
          target: { instanceUuid: vm(201) },
        })
        await assert.rejects(conductors[0]!.deleteArqs({ uuids: [attached.attachment] }), {
          code: 'ARQ_NOT_FOUND',
        })
        await assert.rejects(conductors[0]!.unbindArqs({ uuids: [attached.attachment] }), {
          code: 'ARQ_NOT_FOUND',
        })
        await conductors[0]!.detachAccelerator({ uuid, instanceUuid: vm(201) })
        assert.deepEqual(await handleBooks(), { inUse: [], named: [] })
      })

      void it('attaches racing detaches of the same accelerators leak no handle', async () => {
        const targets = accs.slice(3, 8)
        await Promise.allSettled(
          targets.flatMap(({ uuid }, i) => [
            conductors[i % 2]!.attachAccelerator({ uuid, target: { instanceUuid: vm(300 + i) } }),
            conductors[(i + 1) % 2]!.detachAccelerator({ uuid }),
          ]),
        )
        const books = await handleBooks()
        assert.deepEqual(books.inUse, books.named)
        for (const { uuid } of targets) await conductors[0]!.detachAccelerator({ uuid })
        assert.deepEqual(await handleBooks(), { inUse: [], named: [] })
      })

      void it('acc_specs: concurrent writes with one If-Match, exactly one wins', async () => {
        const uuid = accs[0]!.uuid
        const etag = accSpecsEtag(null)
        const settled = await Promise.allSettled(
          Array.from({ length: 10 }, (_, i) =>
            conductors[i % 2]!.setAcceleratorSpecs({
              uuid,
              accSpecs: { num: i, remote: 0 },
              ifMatch: etag,
            }),
          ),
        )
        assert.equal(settled.filter((s) => s.status === 'fulfilled').length, 1)
        for (const s of settled)
          if (s.status === 'rejected') assert.equal(s.reason.code, 'ACC_SPECS_STALE')
        const stored = await db.db
          .selectFrom('deployables')
          .select('acc_specs')
          .where('uuid', '=', uuid)
          .executeTakeFirstOrThrow()
        const winner = settled.find((s) => s.status === 'fulfilled') as PromiseFulfilledResult<{
          etag: string
        }>
        assert.equal(winner.value.etag, accSpecsEtag(stored.acc_specs))
        // The agent's next report, which changes this accelerator's attributes, leaves the operator's spec alone.
        const list = stormDevices(8, 1)
        list[0]!.deployables[0]!.attributes.push({ key: 'extra', value: '1' })
        const result = await conductors[1]!.reportInventory({
          host: HOST,
          hash: inventoryHash(list),
          devices: list,
          autoActivate: true,
        })
        assert.equal(result.updated > 0 || result.added > 0, true, JSON.stringify(result))
        const after = await db.db
          .selectFrom('deployables')
          .select('acc_specs')
          .where('uuid', '=', uuid)
          .executeTakeFirstOrThrow()
        assert.equal(after.acc_specs, stored.acc_specs)
      })

      void it('a v2 bind for an instance with a v1 attachment is refused (INSTANCE_ALREADY_BOUND), changing nothing', async () => {
        const { uuid } = accs[1]!
        await conductors[0]!.attachAccelerator({ uuid, target: { instanceUuid: vm(400) } })
        const [arq] = await conductors[0]!.createArqs({
          deviceProfileName: 'one',
          projectId: null,
          maxArqs: 8,
        })
        await assert.rejects(
          conductors[1]!.bindArqs({
            bindings: { [arq!.uuid]: { hostname: HOST, instanceUuid: vm(400) } },
          }),
          { code: 'INSTANCE_ALREADY_BOUND' },
        )
        assert.equal(
          (
            await db.db
              .selectFrom('accelerator_requests')
              .select('state')
              .where('uuid', '=', arq!.uuid)
              .executeTakeFirstOrThrow()
          ).state,
          'Initial',
        )
        await conductors[1]!.detachAccelerator({ uuid })
        await conductors[0]!.deleteArqs({ uuids: [arq!.uuid] })
        assert.deepEqual(await handleBooks(), { inUse: [], named: [] })
      })
    },
  )
}

void describe('v1 attach when the host agent fails to prepare the device (sqlite)', () => {
  let db: TestDatabase
  let conductor: Conductor
  const released: string[] = []

  before(async () => {
    db = await (await testDialects()).find((d) => d.name === 'sqlite')!.create()
    // A stand-in for the host's agent: vfio-pci cannot run here. Its prepare fails as a real one does.
    const agent = {
      prepare: async ({ address }: { address: string }) =>
        Promise.reject(new DriverError(`cannot bind ${address} to vfio-pci: device busy`)),
      release: async ({ address }: { address: string }) => {
        released.push(address)
        return { address, changed: false }
      },
    }
    conductor = createConductor(
      { db, log: noopLogger, clock, agentFor: () => agent as never },
      { saveIntervalMs: 1, reapIntervalMs: 0 },
    )
    const list = stormDevices(1, 1, 'PCI')
    await conductor.reportInventory({
      host: HOST,
      hash: inventoryHash(list),
      devices: list,
      autoActivate: true,
    })
  })
  after(async () => {
    await conductor?.stop()
    await db?.close()
  })

  void it('is a 409 ATTACH_FAILED naming the reason, gives the device back, and leaves nothing held', async () => {
    const { uuid } = await db.db.selectFrom('deployables').select('uuid').executeTakeFirstOrThrow()
    await assert.rejects(
      conductor.attachAccelerator({ uuid, target: { instanceUuid: vm(500) } }),
      (err: { code?: string; message: string }) => {
        assert.equal(err.code, 'ATTACH_FAILED')
        assert.match(
          err.message,
          /the agent of storm-host failed to prepare it: cannot bind 0000:10:0\.0 to vfio-pci: device busy/,
        )
        return true
      },
    )
    assert.deepEqual(released, ['0000:10:0.0'])
    assert.equal(
      (await db.db.selectFrom('attach_handles').select('id').where('in_use', '=', 1).execute())
        .length,
      0,
    )
    assert.equal((await db.db.selectFrom('accelerator_requests').select('id').execute()).length, 0)
  })
})
