/**
 * Accelerator requests through the conductor, with a real agent (fake driver: 16 TEST_PCI handles)
 * on the in-process bus and a recording HTTP endpoint standing in for Nova's API (Nova's compute
 * service cannot run here).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import { testDialects, type TestDatabase } from '../support/db.js'
import { ConflictError, InvalidInputError, NotFoundError } from '../../src/domain/errors.js'
import { noopLogger } from '../../src/domain/logger.js'
import { startCore, type Core } from '../../src/main/core.js'
import { createNovaClient } from '../../src/openstack/nova.js'
import { reapStaleBinds } from '../../src/conductor/arq-reaper.js'
import { createConductor } from '../../src/conductor/conductor.js'

const INSTANCE = (n: number) => `0b9c0d1e-0000-4000-8000-${String(n).padStart(12, '0')}`

void describe('accelerator requests through the conductor (sqlite, fake agent, recording Nova)', () => {
  let db: TestDatabase
  let core: Core
  let nova: Server
  const batches: {
    path: string
    version: string | undefined
    events: { name: string; server_uuid: string; tag: string; status: string }[]
  }[] = []
  let rpUuid: string
  let novaUrl: string

  before(async () => {
    nova = createServer((req, res) => {
      let body = ''
      req.on('data', (d: Buffer) => (body += d.toString()))
      req.on('end', () => {
        batches.push({
          path: req.url ?? '',
          version: req.headers['openstack-api-version'] as string | undefined,
          ...(JSON.parse(body) as { events: [] }),
        })
        res.writeHead(200, { 'content-type': 'application/json' }).end(body)
      })
    })
    await new Promise<void>((r) => nova.listen(0, '127.0.0.1', r))
    const port = (nova.address() as { port: number }).port
    novaUrl = `http://127.0.0.1:${port}/v2.1`
    db = await (await testDialects()).find((d) => d.name === 'sqlite')!.create()
    core = await startCore({
      db,
      bus: createInProcessBus(),
      log: noopLogger,
      agent: {
        host: 'node1',
        enabledDrivers: ['fake'],
        autoActivate: true,
        periodicIntervalMs: 3_600_000,
      },
      nova: createNovaClient({
        endpoint: `http://127.0.0.1:${port}/v2.1`,
        token: 'admin',
        timeoutMs: 5000,
      }),
    })
    await core.agent!.discoverNow()
    rpUuid = (await db.db.selectFrom('deployables').select('rp_uuid').executeTakeFirstOrThrow())
      .rp_uuid!
    for (const [name, groups] of [
      ['two-fpgas', [{ 'resources:FPGA': '2', 'trait:CUSTOM_FAKE_DEVICE': 'required' }]],
      ['one-fpga', [{ 'resources:FPGA': '1' }]],
      ['not-fake', [{ 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'forbidden' }]],
      ['huge', [{ 'resources:FPGA': '1000000' }]],
    ] as const) {
      await core.conductorClient.createDeviceProfile({
        name,
        description: null,
        groups: groups.map((g) => ({ ...g })),
      })
    }
  })
  after(async () => {
    await core?.stop()
    await db?.close()
    nova?.close()
  })

  const c = () => core.conductorClient
  const create = (name: string) =>
    c().createArqs({ deviceProfileName: name, projectId: 'p1', maxArqs: 64 })
  const inUse = async () =>
    Number(
      (
        await db.db
          .selectFrom('attach_handles')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('in_use', '=', 1)
          .executeTakeFirstOrThrow()
      ).n,
    )

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
      (await db.db.selectFrom('accelerator_requests').select('id').execute()).length,
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
        [b!.uuid]: { hostname: 'node1', deviceRpUuid: rpUuid, instanceUuid: INSTANCE(2) },
      },
    })
    assert.deepEqual(
      [...standalone, ...novaStyle].map((o) => o.state),
      ['Bound', 'Bound'],
    )
    const rows = await db.db
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
      await db.db
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
        await db.db
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
    assert.match(out!.reason ?? '', /no active deployable on node1 fits/)
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
      await db.db
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
        await db.db
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
    const acc = (await db.db.selectFrom('deployables').select('uuid').executeTakeFirstOrThrow())
      .uuid
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

  void it('reaps a bind left in BindStarted past bind_timeout: BindFailed, handle freed, Nova told', async () => {
    const [arq] = await create('one-fpga')
    const handle = (
      await db.db
        .selectFrom('attach_handles')
        .select('id')
        .where('in_use', '=', 0)
        .orderBy('id')
        .executeTakeFirstOrThrow()
    ).id
    // What a conductor killed between its claim and the agent's answer leaves behind.
    await db.db.updateTable('attach_handles').set({ in_use: 1 }).where('id', '=', handle).execute()
    await db.db
      .updateTable('accelerator_requests')
      .set({
        state: 'BindStarted',
        attach_handle_id: handle,
        instance_uuid: INSTANCE(7),
        hostname: 'node1',
        updated_at: '2026-11-22T06:00:00.000000+00:00',
      })
      .where('uuid', '=', arq!.uuid)
      .execute()
    const committer = {
      run: <T>(fn: (trx: typeof db.db) => Promise<T>) => db.db.transaction().execute(fn),
    }
    const novaClient = createNovaClient({ endpoint: novaUrl, token: 'admin', timeoutMs: 5000 })
    const at = (iso: string) => ({ now: () => new Date(iso) })
    const deps = { db, committer, nova: novaClient, log: noopLogger, bindTimeoutMs: 60_000 }
    // 30 s later: still within the timeout, nothing happens.
    assert.deepEqual(await reapStaleBinds({ ...deps, clock: at('2026-11-22T06:00:30.000Z') }), [])
    batches.length = 0
    assert.deepEqual(await reapStaleBinds({ ...deps, clock: at('2026-11-22T06:01:30.000Z') }), [
      arq!.uuid,
    ])
    const row = await db.db
      .selectFrom('accelerator_requests')
      .select(['state', 'attach_handle_id'])
      .where('uuid', '=', arq!.uuid)
      .executeTakeFirstOrThrow()
    assert.deepEqual(row, { state: 'BindFailed', attach_handle_id: null })
    assert.equal(
      Number(
        (
          await db.db
            .selectFrom('attach_handles')
            .select('in_use')
            .where('id', '=', handle)
            .executeTakeFirstOrThrow()
        ).in_use,
      ),
      0,
    )
    assert.deepEqual(batches[0]!.events, [
      {
        name: 'accelerator-request-bound',
        server_uuid: INSTANCE(7),
        tag: arq!.uuid,
        status: 'failed',
      },
    ])
    // A second pass (another conductor) finds nothing to do.
    assert.deepEqual(await reapStaleBinds({ ...deps, clock: at('2026-11-22T06:02:30.000Z') }), [])
  })

  void it('finishes a delete that a crash left Deleting: row gone, handle freed', async () => {
    const [arq] = await create('one-fpga')
    const handle = (
      await db.db
        .selectFrom('attach_handles')
        .select('id')
        .where('in_use', '=', 0)
        .orderBy('id')
        .executeTakeFirstOrThrow()
    ).id
    await db.db.updateTable('attach_handles').set({ in_use: 1 }).where('id', '=', handle).execute()
    await db.db
      .updateTable('accelerator_requests')
      .set({
        state: 'Deleting',
        attach_handle_id: handle,
        hostname: 'node1',
        updated_at: '2026-01-01T00:00:00.000000+00:00',
      })
      .where('uuid', '=', arq!.uuid)
      .execute()
    // Another conductor with a short bind_timeout runs its reaper every 25 ms.
    const other = createConductor(
      { db, log: noopLogger, clock: { now: () => new Date() } },
      { bindTimeoutMs: 100, reapIntervalMs: 25 },
    )
    try {
      for (let i = 0; i < 100; i++) {
        const left = await db.db
          .selectFrom('accelerator_requests')
          .select('id')
          .where('uuid', '=', arq!.uuid)
          .execute()
        if (left.length === 0) break
        await new Promise((r) => setTimeout(r, 20))
      }
    } finally {
      await other.stop()
    }
    assert.deepEqual(
      await db.db
        .selectFrom('accelerator_requests')
        .select('id')
        .where('uuid', '=', arq!.uuid)
        .execute(),
      [],
    )
    assert.equal(
      Number(
        (
          await db.db
            .selectFrom('attach_handles')
            .select('in_use')
            .where('id', '=', handle)
            .executeTakeFirstOrThrow()
        ).in_use,
      ),
      0,
    )
  })
})
