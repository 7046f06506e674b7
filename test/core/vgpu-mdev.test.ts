/**
 * A vGPU (MDEV) unit through Nova 2026.2's flow (issue 31; docs/nova.md, "MDEV attach handles"),
 * on every database: a core with the nvidia-gpu driver's agent over the recorded `nvidia-gpu/clean`
 * host with mdevs simulated (fixture-mdev.ts), the API served over HTTP.
 *
 * - Nova binds: the ARQ shows `MDEV`, a fresh mdev uuid and the parent's address as Nova's libvirt
 *   driver reads them, and Cyborg creates no mdev (Nova's compute host does, with that uuid);
 * - Nova creates the mdev, later removes it: the agent's discoveries change nothing;
 * - Nova deletes the instance's requests: the unit is cleaned by re-creating exactly that mdev,
 *   then back in service; the next bind gets another mdev uuid;
 * - a standalone bind (no provider named) has the agent create and remove the mdev itself;
 * - a unit claimed before migration 0018 (no mdev uuid) shows, and is released as, its handle uuid.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import type { FastifyInstance } from 'fastify'
import { createApp } from '../../src/api/app.js'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import type { MessageBus } from '../../src/bus/bus.js'
import { createFixtureHostProbe } from '../../src/drivers/host-probe/fixture-host-probe.js'
import { withMdevSimulation } from '../../src/drivers/host-probe/fixture-mdev.js'
import { isCanonicalUuid } from '../../src/domain/ids.js'
import { startCore, type Core } from '../../src/main/core.js'
import type { NovaClient } from '../../src/openstack/nova.js'
import { testDialects, type TestDatabase } from '../support/db.js'

const HOST = 'gpu-1'
const VM = (n: number) => `7c0e0000-0000-4000-8000-${String(n).padStart(12, '0')}`
const TYPE_DIR = '/sys/bus/pci/devices/0000:d8:00.0/mdev_supported_types/nvidia-471'
const nova = {
  sendArqBoundEvents: () => Promise.resolve({ ok: true, results: [] }),
} as unknown as NovaClient

type ArqBody = {
  state: string
  attach_handle_type: string
  attach_handle_uuid: string | null
  attach_handle_info: Record<string, string>
}

for (const dialect of await testDialects()) {
  void describe(
    `a vGPU unit through Nova's MDEV flow on ${dialect.name}`,
    { skip: dialect.skip },
    () => {
      let db: TestDatabase
      let bus: MessageBus
      let core: Core
      let app: FastifyInstance
      let url: string
      const host = withMdevSimulation(
        createFixtureHostProbe('src/drivers/__fixtures__/nvidia-gpu/clean'),
      )

      before(async () => {
        db = await dialect.create()
        bus = createInProcessBus()
        const log = pino({ level: 'silent' })
        core = await startCore({
          db,
          bus,
          log,
          nova,
          conductor: { reapIntervalMs: 0 },
          agent: {
            host: HOST,
            enabledDrivers: ['nvidia-gpu'],
            autoActivate: true,
            periodicIntervalMs: 3_600_000,
            hostProbe: host,
          },
        })
        await core.agent!.discoverNow()
        await core.conductorClient.createDeviceProfile({
          name: 'vgpu',
          description: null,
          groups: [{ 'resources:VGPU': '1' }],
        })
        app = await createApp({ db: db.db, conductor: core.conductorClient, log })
        url = `${await app.listen({ host: '127.0.0.1', port: 0 })}/v2`
      })
      after(async () => {
        await app?.close()
        await core?.stop()
        await bus?.close()
        await db?.close()
      })

      const vgpu = () =>
        db.db
          .selectFrom('deployables')
          .select(['id', 'rp_uuid', 'num_accelerators'])
          .where('name', '=', `${HOST}_0000:d8:00.0_nvidia-471`)
          .executeTakeFirstOrThrow()
      const unitOf = async (arq: string) =>
        db.db
          .selectFrom('accelerator_requests as a')
          .innerJoin('attach_handles as h', 'h.id', 'a.attach_handle_id')
          .select(['h.id', 'h.uuid', 'h.mdev_uuid', 'h.attach_info'])
          .where('a.uuid', '=', arq)
          .executeTakeFirstOrThrow()
      const handle = (id: number) =>
        db.db
          .selectFrom('attach_handles')
          .select(['in_use', 'clean_state', 'mdev_uuid'])
          .where('id', '=', id)
          .executeTakeFirstOrThrow()
      const bind = async (vm: number, rp?: string | null) => {
        const c = core.conductorClient
        const [arq] = await c.createArqs({ deviceProfileName: 'vgpu', projectId: 'p1', maxArqs: 8 })
        const binding = {
          hostname: HOST,
          instanceUuid: VM(vm),
          ...(rp ? { deviceRpUuid: rp } : {}),
        }
        const [out] = await c.bindArqs({ bindings: { [arq!.uuid]: binding } })
        assert.equal(out!.state, 'Bound', out!.reason)
        return arq!.uuid
      }
      const getArq = async (uuid: string): Promise<ArqBody> => {
        const res = await fetch(`${url}/accelerator_requests/${uuid}`)
        assert.equal(res.status, 200, await res.clone().text())
        return (await res.json()) as ArqBody
      }
      const writesFrom = (n: number) => host.writes.slice(n).map((w) => `${w.data} > ${w.path}`)

      let first: { arq: string; mdev: string; handleId: number }

      it('a Nova bind shows the mdev Nova will create, and creates none', async () => {
        const dep = await vgpu()
        assert.equal(dep.num_accelerators, 10, '9 available + 1 recorded mdev')
        const writes = host.writes.length
        const arq = await bind(1, dep.rp_uuid)
        const body = await getArq(arq)
        const unit = await unitOf(arq)
        assert.equal(body.state, 'Bound')
        assert.equal(body.attach_handle_type, 'MDEV')
        // Exactly what Nova's libvirt driver reads: the mdev type and the parent's address fields.
        assert.deepEqual(body.attach_handle_info, {
          asked_type: 'nvidia-471',
          domain: '0000',
          bus: 'd8',
          device: '00',
          function: '0',
          vgpu_mark: 'nvidia-471_0',
        })
        assert.ok(isCanonicalUuid(body.attach_handle_uuid!), String(body.attach_handle_uuid))
        assert.equal(body.attach_handle_uuid, unit.mdev_uuid, 'the handle stores the mdev uuid')
        assert.notEqual(body.attach_handle_uuid, unit.uuid, 'a fresh uuid, not the handle’s own')
        assert.deepEqual(writesFrom(writes), [], 'Nova creates the mdev, not Cyborg')
        first = { arq, mdev: body.attach_handle_uuid!, handleId: unit.id }
      })

      it('Nova creates the mdev, then removes it: discoveries change nothing', async () => {
        const {
          domain,
          bus: b,
          device,
          function: fn,
          asked_type: type,
        } = (await getArq(first.arq)).attach_handle_info
        // Nova's libvirt driver names the parent pci_<domain>_<bus>_<slot>_<function> (libvirt's
        // node device name); its sysfs directory is <domain>:<bus>:<slot>.<function>.
        assert.equal(`pci_${domain}_${b}_${device}_${fn}`, 'pci_0000_d8_00_0')
        const create = `/sys/bus/pci/devices/${domain}:${b}:${device}.${fn}/mdev_supported_types/${type}/create`
        assert.equal(create, `${TYPE_DIR}/create`)
        await host.writeFile(create, first.mdev) // what libvirt does for Nova's _create_mdev
        assert.ok(await host.exists(`/sys/bus/mdev/devices/${first.mdev}`))
        await core.agent!.discoverNow()
        assert.equal((await vgpu()).num_accelerators, 10)
        assert.equal((await getArq(first.arq)).state, 'Bound')

        await host.writeFile(`/sys/bus/mdev/devices/${first.mdev}/remove`, '1') // Nova deletes the VM
        await core.agent!.discoverNow()
        assert.equal((await vgpu()).num_accelerators, 10)
        assert.equal((await getArq(first.arq)).state, 'Bound')
        assert.equal(Number((await handle(first.handleId)).in_use), 1)
      })

      it('delete by instance frees the unit after a clean that re-creates exactly that mdev', async () => {
        const writes = host.writes.length
        const res = await fetch(`${url}/accelerator_requests?instance=${VM(1)}`, {
          method: 'DELETE',
        })
        assert.equal(res.status, 204, await res.text())
        await core.conductor!.cleaningIdle()
        assert.deepEqual(writesFrom(writes), [
          `${first.mdev} > ${TYPE_DIR}/create`,
          `1 > /sys/bus/mdev/devices/${first.mdev}/remove`,
        ])
        assert.equal(await host.exists(`/sys/bus/mdev/devices/${first.mdev}`), false, 'as found')
        const unit = await handle(first.handleId)
        assert.deepEqual([Number(unit.in_use), unit.clean_state], [0, null])
        const [record] = await db.db
          .selectFrom('custody_records')
          .select(['clean_method', 'clean_result'])
          .where('kind', '=', 'clean')
          .execute()
        assert.deepEqual(record, { clean_method: 'mdev-recreate', clean_result: 'ok' })

        const again = await bind(2, (await vgpu()).rp_uuid)
        const unit2 = await unitOf(again)
        assert.equal(unit2.id, first.handleId, 'the same unit')
        assert.notEqual(unit2.mdev_uuid, first.mdev, 'under a new mdev uuid')
        assert.equal((await getArq(again)).attach_handle_uuid, unit2.mdev_uuid)
      })

      it('a standalone bind creates the mdev itself and removes it at unbind', async () => {
        const writes = host.writes.length
        const arq = await bind(3)
        const { mdev_uuid: mdev } = await unitOf(arq)
        assert.equal((await getArq(arq)).attach_handle_uuid, mdev)
        assert.deepEqual(writesFrom(writes), [`${mdev} > ${TYPE_DIR}/create`])
        await core.conductorClient.unbindArqs({ uuids: [arq] })
        await core.conductor!.cleaningIdle()
        assert.deepEqual(writesFrom(writes).slice(1, 2), [
          `1 > /sys/bus/mdev/devices/${mdev}/remove`,
        ])
        assert.equal(await host.exists(`/sys/bus/mdev/devices/${mdev!}`), false)
      })

      it('a unit claimed before migration 0018 shows and frees its handle uuid', async () => {
        const arq = await bind(4)
        const unit = await unitOf(arq)
        await db.db
          .updateTable('attach_handles')
          .set({ mdev_uuid: null })
          .where('id', '=', unit.id)
          .execute()
        assert.equal((await getArq(arq)).attach_handle_uuid, unit.uuid)
        // Its mdev was made under the new uuid here; the old code made it under the handle's uuid.
        await host.writeFile(`/sys/bus/mdev/devices/${unit.mdev_uuid!}/remove`, '1')
        await host.writeFile(`${TYPE_DIR}/create`, unit.uuid)
        const writes = host.writes.length
        await core.conductorClient.unbindArqs({ uuids: [arq] })
        await core.conductor!.cleaningIdle()
        assert.deepEqual(writesFrom(writes)[0], `1 > /sys/bus/mdev/devices/${unit.uuid}/remove`)
        assert.equal(await host.exists(`/sys/bus/mdev/devices/${unit.uuid}`), false)
      })
    },
  )
}
