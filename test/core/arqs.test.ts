/**
 * Accelerator requests through the conductor, with a real agent (fake driver: 16 TEST_PCI handles)
 * on the in-process bus and a recording HTTP endpoint standing in for Nova's API (Nova's compute
 * service cannot run here). The stack is test/support/arq-rig.ts; the stale-bind reaper's tests
 * are in arq-reaper.test.ts.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { ConflictError, InvalidInputError, NotFoundError } from '../../src/domain/errors.js'
import { INSTANCE, useArqRig } from '../support/arq-rig.js'

void describe('accelerator requests through the conductor (sqlite, fake agent, recording Nova)', () => {
  const rig = useArqRig()
  const { batches, create } = rig
  const c = () => rig.core.conductorClient
  // A released unit is in use until the fake driver's clean has run (docs/cleaning.md).
  const inUse = async () => {
    await rig.core.conductor!.cleaningIdle()
    return Number(
      (
        await rig.db.db
          .selectFrom('attach_handles')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('in_use', '=', 1)
          .executeTakeFirstOrThrow()
      ).n,
    )
  }

  void it('creates one ARQ per unit; refuses an unknown profile and a huge amount, naming them', async () => {
    const arqs = await create('two-fpgas')
    assert.deepEqual(
      arqs.map((a) => [a.state, a.deviceProfileGroupId, a.projectId]),
      [
        ['Initial', 0, 'p1'],
        ['Initial', 0, 'p1'],
      ],
    )
    await assert.rejects(
      create('nope'),
      (err) => err instanceof NotFoundError && /nope/.test(err.message),
    )
    await assert.rejects(
      create('huge'),
      (err) =>
        err instanceof InvalidInputError && err.details?.field === 'groups[0].resources:FPGA',
    )
    assert.equal(
      (await rig.db.db.selectFrom('accelerator_requests').select('id').execute()).length,
      2,
      'nothing half-created',
    )
  })

  void it('binds standalone (host only) and Nova-style (provider), one handle each, and tells Nova once per bind', async () => {
    const [a, b] = await create('two-fpgas')
    batches.length = 0
    const standalone = await c().bindArqs({
      bindings: { [a!.uuid]: { hostname: 'node1', instanceUuid: INSTANCE(1) } },
    })
    const novaStyle = await c().bindArqs({
      bindings: {
        [b!.uuid]: { hostname: 'node1', deviceRpUuid: rig.rpUuid, instanceUuid: INSTANCE(2) },
      },
    })
    assert.deepEqual(
      [...standalone, ...novaStyle].map((o) => o.state),
      ['Bound', 'Bound'],
    )
    const rows = await rig.db.db
      .selectFrom('accelerator_requests')
      .select(['uuid', 'attach_handle_id', 'deployable_id', 'hostname'])
      .where('uuid', 'in', [a!.uuid, b!.uuid])
      .execute()
    assert.equal(new Set(rows.map((r) => r.attach_handle_id)).size, 2)
    assert.ok(rows.every((r) => r.deployable_id !== null && r.hostname === 'node1'))
    assert.equal(await inUse(), 2)
    assert.deepEqual(
      batches.map((x) => [x.path, x.version, x.events.length]),
      [
        ['/v2.1/os-server-external-events', 'compute 2.82', 1],
        ['/v2.1/os-server-external-events', 'compute 2.82', 1],
      ],
    )
    assert.deepEqual(batches[0]!.events[0], {
      name: 'accelerator-request-bound',
      server_uuid: INSTANCE(1),
      tag: a!.uuid,
      status: 'completed',
    })
  })

  void it('refuses to bind an instance twice or an ARQ in the wrong state, changing nothing', async () => {
    const [x] = await create('one-fpga')
    await assert.rejects(
      c().bindArqs({ bindings: { [x!.uuid]: { hostname: 'node1', instanceUuid: INSTANCE(1) } } }),
      (err) => err instanceof ConflictError && err.code === 'INSTANCE_ALREADY_BOUND',
    )
    const bound = (
      await rig.db.db
        .selectFrom('accelerator_requests')
        .select('uuid')
        .where('state', '=', 'Bound')
        .executeTakeFirstOrThrow()
    ).uuid
    await assert.rejects(
      c().bindArqs({ bindings: { [bound]: { hostname: 'node1', instanceUuid: INSTANCE(9) } } }),
      (err) => err instanceof ConflictError && err.code === 'ARQ_BAD_STATE',
    )
    assert.equal(
      (
        await rig.db.db
          .selectFrom('accelerator_requests')
          .select('state')
          .where('uuid', '=', x!.uuid)
          .executeTakeFirstOrThrow()
      ).state,
      'Initial',
    )
  })

  void it('fails cleanly when nothing fits or no handle is free, and Nova hears "failed"', async () => {
    const [f] = await create('not-fake')
    batches.length = 0
    const [out] = await c().bindArqs({
      bindings: { [f!.uuid]: { hostname: 'node1', instanceUuid: INSTANCE(3) } },
    })
    assert.equal(out!.state, 'BindFailed')
    assert.match(
      out!.reason ?? '',
      /^no fit on node1: CUSTOM_FAKE_DEVICE is forbidden by the group \(forbidden_trait\), and \S+ has it$/,
    )
    assert.equal(batches[0]!.events[0]!.status, 'failed')
    // 16 handles: 2 are taken; 14 more bind, the 15th finds none free. All at once.
    const more = await Promise.all(
      Array.from({ length: 15 }, () => create('one-fpga').then(([arq]) => arq!)),
    )
    const bindings = Object.fromEntries(
      more.map((arq, i) => [arq.uuid, { hostname: 'node1', instanceUuid: INSTANCE(100 + i) }]),
    )
    const outcomes = await c().bindArqs({ bindings })
    assert.equal(outcomes.filter((o) => o.state === 'Bound').length, 14)
    assert.match(
      outcomes.find((o) => o.state === 'BindFailed')!.reason ?? '',
      /no free attach handle/,
    )
    assert.equal(await inUse(), 16)
  })

  void it('unbinds and deletes, freeing handles; delete by instance is idempotent; unknown uuids are named', async () => {
    const one = (
      await rig.db.db
        .selectFrom('accelerator_requests')
        .select('uuid')
        .where('instance_uuid', '=', INSTANCE(1))
        .executeTakeFirstOrThrow()
    ).uuid
    assert.deepEqual(await c().unbindArqs({ uuids: [one] }), [{ uuid: one, state: 'Unbound' }])
    assert.equal(await inUse(), 15)
    assert.deepEqual((await c().deleteArqs({ instanceUuid: INSTANCE(2) })).deleted.length, 1)
    assert.deepEqual(await c().deleteArqs({ instanceUuid: INSTANCE(2) }), { deleted: [] })
    assert.equal(await inUse(), 14)
    const missing = '0b9c0d1e-0000-4000-8000-99999999999a'
    await assert.rejects(
      c().deleteArqs({ uuids: [one, missing] }),
      (err) => err instanceof NotFoundError && err.message.includes(missing),
    )
    assert.equal(
      (
        await rig.db.db
          .selectFrom('accelerator_requests')
          .select('id')
          .where('uuid', '=', one)
          .execute()
      ).length,
      0,
      'the known one was deleted',
    )
  })

  void it('a v1 attach to an instance tells Nova like a bind (the Nova path); one to a host does not', async () => {
    const acc = (await rig.db.db.selectFrom('deployables').select('uuid').executeTakeFirstOrThrow())
      .uuid
    await rig.core.conductor!.cleaningIdle()
    batches.length = 0
    const attached = await c().attachAccelerator({
      uuid: acc,
      target: { instanceUuid: INSTANCE(50) },
    })
    assert.deepEqual(
      batches.map((x) => x.events),
      [
        [
          {
            name: 'accelerator-request-bound',
            server_uuid: INSTANCE(50),
            tag: attached.attachment,
            status: 'completed',
          },
        ],
      ],
    )
    await c().attachAccelerator({ uuid: acc, target: { hostname: 'node1' } })
    assert.equal(batches.length, 1)
    // The detach takes v1's two attachments and leaves the 14 units v2's requests hold.
    assert.deepEqual((await c().detachAccelerator({ uuid: acc })).detached.length, 2)
    assert.equal(await inUse(), 14)
  })
})
