/**
 * Accelerator request and deployable events through an in-process conductor with a recording sink,
 * on every database: created, then bound with what a tenant-facing service needs (project,
 * instance, host, provider, handle type); a refused bind writes none; a bind with no device left
 * is bind_failed (ERROR); unbound names the binding it let go; deleting a bound request is unbound
 * then deleted; a bind that programs an FPGA is deployable.programmed then bound; a v1 attach is
 * created and bound, its detach unbound and deleted; the reaper's timeout is bind_failed.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { testDialects } from '../../../test/support/db.js'
import { sampleDevice } from '../../../test/support/sample-inventory.js'
import { updateArqStates } from '../../db/arqs.js'
import { createGroupCommitter } from '../../db/core/group-commit.js'
import { noopLogger } from '../../domain/logger.js'
import { inventoryHash } from '../../rpc/inventory-hash.js'
import { reapStaleBinds } from '../arq/arq-reaper.js'
import { createConductor } from '../conductor.js'
import type { EventSink, OutboxEvent } from './event-sinks.js'

const IMAGE = '7f5c0b8e-0000-4000-8000-00000000f9a1'
const instance = (n: number) => `0b9c0d1e-0000-4000-8000-00000000000${n}`

const data = (e: OutboxEvent | undefined) =>
  (e?.payload['cyborg_object.data'] ?? {}) as Record<string, unknown>

for (const dialect of await testDialects()) {
  await test(`accelerator request events on ${dialect.name}`, { skip: dialect.skip }, async () => {
    const db = await dialect.create()
    const clock = { now: () => new Date('2026-11-25T06:00:00Z') }
    const events: OutboxEvent[] = []
    const sink: EventSink = { name: 'recording', deliver: async (b) => void events.push(...b) }
    const agentFor = () => ({
      programFpgaImage: async () => ({ imageId: IMAGE }),
      cleanUnit: async () => ({
        driver: 'fake',
        policy: 'auto',
        method: 'fake',
        evidenceSha256: 'e'.repeat(64),
        durationMs: 0,
      }),
    })
    const conductor = createConductor(
      { db, log: noopLogger, clock, agentFor: agentFor as never, eventSinks: [sink] },
      { saveIntervalMs: 0, reapIntervalMs: 0, heartbeats: false },
    )
    // Released units are cleaned (docs/cleaning.md) before the next bind can take them; their
    // `accelerator.device.cleaned` events are left out here (events-devices.test.ts has them).
    const since = async (mark: number) => {
      await conductor.cleaningIdle()
      await conductor.drainEvents()
      return events
        .slice(mark)
        .filter((e) => e.eventType !== 'accelerator.device.cleaned')
        .map((e) => [e.eventType, e.resourceUuid, e.priority])
    }
    const bind = (uuid: string, n: number, extra: Record<string, string> = {}) =>
      conductor.bindArqs({
        bindings: { [uuid]: { hostname: 'h1', instanceUuid: instance(n), ...extra } },
      })
    try {
      const devices = [
        sampleDevice('h1', 0, { handles: 2, attachType: 'TEST_PCI' }),
        sampleDevice('h1', 1, { handles: 1, attachType: 'TEST_PCI' }),
      ]
      const hash = inventoryHash(devices)
      await conductor.reportInventory({ host: 'h1', hash, devices, autoActivate: true })
      const [gpu, fpga] = await db.db
        .selectFrom('deployables')
        .select(['uuid', 'rp_uuid'])
        .orderBy('id')
        .execute()
      await conductor.createDeviceProfile({
        name: 'gpu',
        description: null,
        groups: [{ 'resources:PGPU': '1' }],
      })
      await conductor.createDeviceProfile({
        name: 'fpga',
        description: null,
        groups: [{ 'resources:FPGA': '1', 'accel:bitstream_id': IMAGE }],
      })
      await conductor.drainEvents()

      let mark = events.length
      const ask = { deviceProfileName: 'gpu', projectId: 'p1', maxArqs: 8 }
      const [a1, a2, a3] = [
        ...(await conductor.createArqs(ask)),
        ...(await conductor.createArqs(ask)),
        ...(await conductor.createArqs(ask)),
      ]
      assert.deepEqual(await bind(a1!.uuid, 1, { deviceRpUuid: gpu!.rp_uuid! }), [
        { uuid: a1!.uuid, state: 'Bound' },
      ])
      assert.deepEqual(await since(mark), [
        ['accelerator.arq.created', a1!.uuid, 'INFO'],
        ['accelerator.arq.created', a2!.uuid, 'INFO'],
        ['accelerator.arq.created', a3!.uuid, 'INFO'],
        ['accelerator.arq.bound', a1!.uuid, 'INFO'],
      ])
      const bound = events.at(-1)!
      assert.equal(bound.projectId, 'p1')
      assert.equal(bound.payload['cyborg_object.name'], 'ArqPayload')
      const { attach_handle_uuid: handleUuid, ...boundData } = data(bound)
      assert.deepEqual(boundData, {
        uuid: a1!.uuid,
        state: 'Bound',
        device_profile_name: 'gpu',
        device_profile_group_id: 0,
        project_id: 'p1',
        hostname: 'h1',
        device_rp_uuid: gpu!.rp_uuid,
        instance_uuid: instance(1),
        attach_handle_type: 'TEST_PCI',
        attach_handle_info: { domain: '0000', bus: '10', device: '00', function: '0' },
        reason: null,
      })
      assert.equal(typeof handleUuid, 'string')

      // Refused (the instance is bound already): the whole transaction rolled back, no event.
      mark = events.length
      await assert.rejects(bind(a2!.uuid, 1), { code: 'INSTANCE_ALREADY_BOUND' })
      assert.deepEqual(await since(mark), [])

      // a2 takes the GPU's last handle; a3 finds none: bind_failed, an ERROR with the reason.
      await bind(a2!.uuid, 2)
      const [failed] = await bind(a3!.uuid, 3)
      assert.equal(failed?.state, 'BindFailed')
      await conductor.unbindArqs({ uuids: [a1!.uuid] })
      await conductor.deleteArqs({ uuids: [a2!.uuid] })
      assert.deepEqual(await since(mark), [
        ['accelerator.arq.bound', a2!.uuid, 'INFO'],
        ['accelerator.arq.bind_failed', a3!.uuid, 'ERROR'],
        ['accelerator.arq.unbound', a1!.uuid, 'INFO'],
        ['accelerator.arq.unbound', a2!.uuid, 'INFO'],
        ['accelerator.arq.deleted', a2!.uuid, 'INFO'],
      ])
      const [, bindFailed, unbound, , deleted] = events.slice(mark)
      assert.equal(data(bindFailed).reason, failed?.reason)
      assert.deepEqual(
        [data(unbound).state, data(unbound).instance_uuid, data(unbound).hostname],
        ['Unbound', instance(1), 'h1'],
        'unbound names the binding it let go',
      )
      assert.deepEqual([data(deleted).instance_uuid, data(deleted).project_id], [instance(2), 'p1'])

      // FPGA programming during a bind: programmed, then bound.
      mark = events.length
      const [a4] = await conductor.createArqs({ ...ask, deviceProfileName: 'fpga' })
      assert.equal((await bind(a4!.uuid, 4))[0]?.state, 'Bound')
      assert.deepEqual(await since(mark), [
        ['accelerator.arq.created', a4!.uuid, 'INFO'],
        ['accelerator.deployable.programmed', fpga!.uuid, 'INFO'],
        ['accelerator.arq.bound', a4!.uuid, 'INFO'],
      ])
      assert.deepEqual(data(events[mark + 1]), {
        uuid: fpga!.uuid,
        name: 'h1_0000:11:00.0',
        hostname: 'h1',
        device_uuid: data(events[mark + 1]).device_uuid,
        num_accelerators: 1,
        rp_uuid: fpga!.rp_uuid,
        driver_name: 'intel-fpga',
        bitstream_id: IMAGE,
        // DeployablePayload 1.1: the program API's fields, null for a bind's program.
        operation_uuid: null,
        image_uuid: null,
        user_id: null,
        project_id: null,
        reason: null,
        custody_record_uuid: null,
      })

      // v1: an attach is a request created and bound; a detach, unbound and deleted.
      mark = events.length
      const { attachment } = await conductor.attachAccelerator({
        uuid: gpu!.uuid,
        target: { instanceUuid: instance(5) },
      })
      await conductor.detachAccelerator({ uuid: gpu!.uuid })
      assert.deepEqual(await since(mark), [
        ['accelerator.arq.created', attachment, 'INFO'],
        ['accelerator.arq.bound', attachment, 'INFO'],
        ['accelerator.arq.unbound', attachment, 'INFO'],
        ['accelerator.arq.deleted', attachment, 'INFO'],
      ])
      assert.equal(data(events[mark]).device_profile_name, null)
      assert.equal(data(events[mark + 1]).instance_uuid, instance(5))

      // The reaper fails a bind left BindStarted past bind_timeout.
      mark = events.length
      const [a6] = await conductor.createArqs(ask)
      const started = { hostname: 'h1', instanceUuid: instance(6) }
      await updateArqStates(db.db, [a6!.uuid], 'BindStarted', {
        now: '2026-11-25T05:00:00.000000+00:00',
        set: started,
      })
      const committer = createGroupCommitter(db, { intervalMs: 0, maxBatch: 8 })
      const reaper = { db, committer, log: noopLogger, clock, bindTimeoutMs: 60_000 }
      assert.deepEqual(await reapStaleBinds(reaper), [a6!.uuid])
      await committer.close()
      assert.deepEqual(await since(mark), [
        ['accelerator.arq.created', a6!.uuid, 'INFO'],
        ['accelerator.arq.bind_failed', a6!.uuid, 'ERROR'],
      ])
      assert.equal(data(events.at(-1)).reason, 'not bound within bind_timeout (60 s)')
      assert.equal(new Set(events.map((e) => e.uuid)).size, events.length, 'each once')
    } finally {
      await conductor.stop()
      await db.close()
    }
  })
}
