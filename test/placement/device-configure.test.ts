/**
 * Re-partitioning devices (`configureDevice`, docs/drivers.md "Configure") on fixture sysfs trees
 * (the fixture probe simulates SR-IOV), with a real Placement, the agent's discovery period at an
 * hour: a QAT PF's VFs 4 → 8 → 2 and an NVIDIA pGPU's vGPU type, with the providers and their
 * inventories read back from Placement after each step; a 409 naming the request while a VF is
 * bound; the custody records and events of each change.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import { noopLogger } from '../../src/domain/logger.js'
import { createFixtureHostProbe } from '../../src/drivers/host-probe/fixture-host-probe.js'
import { startCore, type Core } from '../../src/main/core.js'
import { testDialects, type TestDatabase } from '../support/db.js'
import { placementSkip, startPlacement, type RunningPlacement } from '../support/peers/placement.js'
import { ROOT } from '../support/service.js'

const skip = await placementSkip()
const FIXTURES = path.join(ROOT, 'src/drivers/__fixtures__')
const ADMIN = { userId: 'u-ops', projectId: 'p-ops' }

void describe('configure with real Placement', { skip }, () => {
  let placement: RunningPlacement
  before(async () => {
    placement = await startPlacement()
  })
  after(() => placement?.stop())

  /** A core whose agent (`host`) sees fixture `fixture` through the fixture probe. */
  const startHost = async (
    host: string,
    fixture: string,
    driver: string,
    failWrite?: (path: string, data: string) => boolean,
  ) => {
    const db = await (await testDialects()).find((d) => d.name === 'sqlite')!.create()
    const core = await startCore({
      db,
      bus: createInProcessBus(),
      log: noopLogger,
      agent: {
        host,
        enabledDrivers: [driver],
        autoActivate: true,
        periodicIntervalMs: 3_600_000,
        hostProbe: createFixtureHostProbe(path.join(FIXTURES, fixture), { failWrite }),
      },
      placement: { client: placement.client, createRootProvider: true },
    })
    await core.agent!.discoverNow()
    return { db, core }
  }
  /** The device's deployables in the database, by name, with what Placement holds for each. */
  const layout = async (db: TestDatabase, deviceUuid: string) => {
    const deps = await db.db
      .selectFrom('deployables as p')
      .innerJoin('devices as d', 'd.id', 'p.device_id')
      .select(['p.name', 'p.rp_uuid'])
      .where('d.uuid', '=', deviceUuid)
      .orderBy('p.name')
      .execute()
    const out: Record<string, { total: number; reserved: number; traits: string[] }> = {}
    for (const d of deps) {
      const inv = await placement.client.getInventories(d.rp_uuid!)
      const [rc] = Object.values(inv)
      out[d.name] = {
        total: rc!.total,
        reserved: rc!.reserved,
        traits: (await placement.client.getTraits(d.rp_uuid!)).filter((t) =>
          t.startsWith('CUSTOM_NVIDIA_VGPU'),
        ),
      }
    }
    return { names: Object.keys(out), providers: out, rps: deps.map((d) => d.rp_uuid!) }
  }
  const deviceOf = async (db: TestDatabase, address: string) =>
    (
      await db.db
        .selectFrom('devices')
        .select('uuid')
        .where('cpid_info', 'like', `%"bus":"${address}"%`)
        .executeTakeFirstOrThrow()
    ).uuid

  void describe('a QAT PF (intel-qat/sriov)', () => {
    let db: TestDatabase
    let core: Core
    let pf: string
    before(async () => {
      ;({ db, core } = await startHost('qat-1', 'intel-qat/sriov', 'intel-qat'))
      pf = await deviceOf(db, '3d')
    })
    after(async () => {
      await core?.stop()
      await db?.close()
    })
    const configure = (sriovNumvfs: number) =>
      core.conductorClient.configureDevice({ uuid: pf, change: { sriovNumvfs }, ...ADMIN })

    void it('VFs 4 → 8 → 2: Placement has one provider per VF after each, and the vanished ones are gone', async () => {
      const start = await layout(db, pf)
      assert.equal(start.names.length, 4)
      const up = await configure(8)
      assert.deepEqual(
        [up.previous, up.applied, up.changed],
        [{ sriovNumvfs: 4 }, { sriovNumvfs: 8 }, true],
      )
      const eight = await layout(db, pf)
      assert.equal(eight.names.length, 8)
      assert.ok(Object.values(eight.providers).every((p) => p.total === 1 && p.reserved === 0))
      assert.deepEqual(
        eight.names.slice(0, 4),
        start.names,
        'the first four VFs keep their providers',
      )

      await configure(2)
      const two = await layout(db, pf)
      assert.equal(two.names.length, 2)
      assert.ok(Object.values(two.providers).every((p) => p.total === 1 && p.reserved === 0))
      const gone = eight.rps.filter((rp) => !two.rps.includes(rp))
      assert.equal(gone.length, 6)
      for (const rp of gone) assert.equal(await placement.client.getProvider(rp), null, rp)

      await core.conductor!.drainCustody()
      const records = await db.db
        .selectFrom('custody_records')
        .select(['device_uuid', 'user_id', 'detail'])
        .where('kind', '=', 'configure')
        .orderBy('id')
        .execute()
      assert.deepEqual(
        records.map((r) => [
          r.device_uuid,
          r.user_id,
          (JSON.parse(r.detail!) as { applied: unknown }).applied,
        ]),
        [
          [pf, ADMIN.userId, { sriov_numvfs: 8 }],
          [pf, ADMIN.userId, { sriov_numvfs: 2 }],
        ],
      )
      const events = await db.db
        .selectFrom('events')
        .select('event_type')
        .where('event_type', '=', 'accelerator.device.configured')
        .execute()
      assert.equal(events.length, 2)
    })

    void it('refuses out of range, naming the field and the maximum, and changes nothing', async () => {
      await assert.rejects(configure(17), (err: Error & { details?: { field?: string } }) => {
        assert.equal(err.name, 'InvalidInputError')
        assert.equal(err.details?.field, 'sriov_numvfs')
        assert.match(err.message, /16/)
        return true
      })
      assert.equal((await layout(db, pf)).names.length, 2)
    })

    void it('is a 409 naming the request while a VF is bound, and the layout stays', async () => {
      await core.conductorClient.createDeviceProfile({
        name: 'qat',
        description: null,
        groups: [{ 'resources:CUSTOM_QAT': '1' }],
      })
      const [arq] = await core.conductorClient.createArqs({
        deviceProfileName: 'qat',
        projectId: null,
        maxArqs: 1,
      })
      const [bound] = await core.conductorClient.bindArqs({
        bindings: {
          [arq!.uuid]: { hostname: 'qat-1', instanceUuid: '0f9d0000-0000-4000-8000-000000000001' },
        },
      })
      assert.equal(bound!.state, 'Bound', bound!.reason ?? '')
      // The bind may take the other PF's function: hold one of this PF's VFs for sure.
      const onPf = await db.db
        .selectFrom('attach_handles as h')
        .innerJoin('deployables as p', 'p.id', 'h.deployable_id')
        .innerJoin('devices as d', 'd.id', 'p.device_id')
        .select('h.in_use')
        .where('d.uuid', '=', pf)
        .execute()
      if (onPf.every((h) => Number(h.in_use) === 0)) {
        const [second] = await core.conductorClient.createArqs({
          deviceProfileName: 'qat',
          projectId: null,
          maxArqs: 1,
        })
        await core.conductorClient.bindArqs({
          bindings: {
            [second!.uuid]: {
              hostname: 'qat-1',
              instanceUuid: '0f9d0000-0000-4000-8000-000000000002',
            },
          },
        })
      }
      await assert.rejects(configure(4), (err: Error & { code?: string }) => {
        assert.equal(err.name, 'ConflictError')
        assert.equal(err.code, 'RECONFIG_UNITS_HELD')
        assert.match(err.message, /cannot configure device .* accelerator request [0-9a-f-]{36}/)
        return true
      })
      const after = await layout(db, pf)
      assert.equal(after.names.length, 2)
      assert.ok(
        Object.values(after.providers).every((p) => p.reserved <= 1),
        'no unit left fenced',
      )
    })
  })

  void describe('an NVIDIA pGPU (nvidia-gpu/vgpu)', () => {
    let db: TestDatabase
    let core: Core
    let gpu: string
    before(async () => {
      ;({ db, core } = await startHost('gpu-1', 'nvidia-gpu/vgpu', 'nvidia-gpu'))
      gpu = await deviceOf(db, '3b')
    })
    after(async () => {
      await core?.stop()
      await db?.close()
    })

    void it('a vGPU type change leaves one provider of that type, with its trait and instances', async () => {
      const start = await layout(db, gpu)
      assert.deepEqual(
        start.names.map((n) => n.split('_').at(-1)),
        ['nvidia-222', 'nvidia-319'],
      )
      const out = await core.conductorClient.configureDevice({
        uuid: gpu,
        change: { vgpuType: 'nvidia-319' },
        ...ADMIN,
      })
      assert.equal(out.applied.vgpuType, 'nvidia-319')
      const chosen = await layout(db, gpu)
      assert.equal(chosen.names.length, 1)
      const [only] = Object.values(chosen.providers)
      assert.deepEqual(
        [only!.total, only!.reserved, only!.traits],
        [4, 0, ['CUSTOM_NVIDIA_VGPU_T4_4C']],
      )
      const gone = start.rps.filter((rp) => !chosen.rps.includes(rp))
      assert.equal(gone.length, 1)
      assert.equal(await placement.client.getProvider(gone[0]!), null)

      await assert.rejects(
        core.conductorClient.configureDevice({ uuid: gpu, change: { vgpuType: 'nvidia-999' } }),
        (err: Error & { details?: { field?: string } }) => err.details?.field === 'vgpu_type',
      )
      // Back to every type.
      await core.conductorClient.configureDevice({ uuid: gpu, change: { vgpuType: '*' } })
      assert.equal((await layout(db, gpu)).names.length, 2)
    })
  })

  void describe('a QAT PF whose sriov_numvfs writes fail', () => {
    let db: TestDatabase
    let core: Core
    let pf: string
    /** The counts whose write fails now. */
    const failing = new Set<string>()
    before(async () => {
      ;({ db, core } = await startHost(
        'qat-2',
        'intel-qat/sriov',
        'intel-qat',
        (p, data) => p.endsWith('/sriov_numvfs') && failing.has(data.trim()),
      ))
      pf = await deviceOf(db, '3d')
    })
    after(async () => {
      await core?.stop()
      await db?.close()
    })
    const configure = (sriovNumvfs: number) =>
      core.conductorClient.configureDevice({ uuid: pf, change: { sriovNumvfs }, ...ADMIN })
    const health = async () =>
      db.db
        .selectFrom('devices')
        .select(['health', 'health_reason'])
        .where('uuid', '=', pf)
        .executeTakeFirstOrThrow()

    void it('put back: the old layout stays and the device stays healthy', async () => {
      failing.add('8')
      await assert.rejects(
        configure(8),
        (err: Error & { code?: string; details?: Record<string, unknown> }) => {
          assert.equal(err.code, 'CONFIGURE_FAILED')
          assert.equal(err.details?.restored, true)
          return true
        },
      )
      assert.equal((await layout(db, pf)).names.length, 4)
      assert.equal((await health()).health, 'ok')
    })

    void it('not put back: the device is fenced with the reason until a configure succeeds', async () => {
      failing.add('4')
      await assert.rejects(configure(8), { code: 'CONFIGURE_FAILED' })
      const fenced = await health()
      assert.equal(fenced.health, 'failed')
      assert.match(fenced.health_reason ?? '', /^configure failed: /)
      // A report does not lift it.
      await core.agent!.discoverNow()
      assert.equal((await health()).health, 'failed')
      failing.clear()
      await configure(2)
      assert.equal((await health()).health, 'ok')
      assert.equal((await layout(db, pf)).names.length, 2)
      const failed = await db.db
        .selectFrom('events')
        .select('payload')
        .where('event_type', '=', 'accelerator.device.configure_failed')
        .execute()
      assert.deepEqual(
        failed.map(
          (e) =>
            (JSON.parse(e.payload) as Record<string, Record<string, unknown>>)[
              'cyborg_object.data'
            ]!.restored,
        ),
        [true, false],
      )
    })
  })
})
