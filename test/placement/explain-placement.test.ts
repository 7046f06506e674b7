/**
 * Explain compared with a real Placement (issue 17), through a real conductor on the in-process
 * bus and the API in process: a candidate that fits and is offered; one Placement reserves in full
 * (inventory reserved); one whose trait Placement lacks (traits); a Cyborg-only rule on a provider
 * Placement offers (expected); and explain without Placement, with Placement down, and with a
 * conductor older than RPC 1.6.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import type { FastifyInstance } from 'fastify'
import { createApp } from '../../src/api/app.js'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import type { MessageBus } from '../../src/bus/bus.js'
import { startCore, type Core } from '../../src/main/core.js'
import { createPlacementClient } from '../../src/openstack/placement.js'
import type { ConductorRpc } from '../../src/rpc/conductor-rpc.js'
import { NotFoundError } from '../../src/domain/errors.js'
import { inventoryHash } from '../../src/rpc/inventory-hash.js'
import { testDialects, type TestDatabase } from '../support/db.js'
import { sampleDevice } from '../support/sample-inventory.js'
import { freePort } from '../support/service.js'
import { placementSkip, startPlacement, type RunningPlacement } from '../support/peers/placement.js'

const skip = await placementSkip()
const log = pino({ level: 'silent' })
const HOST = 'px'
/** FPGAs 1, 3, 5 and 7 of px, and GPU 0. */
const DEVICES = [0, 1, 3, 5, 7].map((n) => sampleDevice(HOST, n))
const name = (n: number) => `${HOST}_0000:${(0x10 + n).toString(16)}:00.0`

interface Candidate {
  deployable_name: string
  rule: string
  placement: 'offered' | 'not_offered' | null
  placement_reason: string | null
}
interface Answer {
  placement: { configured: boolean; error?: string; note?: string } | null
  groups: { resource_class: string | null; candidates: Candidate[] }[]
}

/** A conductor (with `placement` when given) and the API over it, on one fresh database. */
async function stackOf(placement?: RunningPlacement['client']) {
  const db: TestDatabase = await (await testDialects()).find((d) => d.name === 'sqlite')!.create()
  const bus: MessageBus = createInProcessBus()
  const core: Core = await startCore({
    db,
    bus,
    log,
    conductor: { saveIntervalMs: 1 },
    ...(placement ? { placement: { client: placement, createRootProvider: true } } : {}),
  })
  await core.conductorClient.reportInventory({
    host: HOST,
    hash: inventoryHash(DEVICES),
    devices: DEVICES,
    autoActivate: true,
    resourceProvider: { name: HOST },
  })
  await core.conductorClient.createDeviceProfile({
    name: 'fpga',
    description: null,
    groups: [
      { 'resources:FPGA': '1', 'trait:CUSTOM_FPGA_INTEL': 'required' },
      { 'resources:PGPU': '1' },
      { 'resources:FPGA': '1', 'trait:CUSTOM_NOT_IN_PLACEMENT': 'required' },
      { 'resources:CUSTOM_NOT_IN_PLACEMENT': '1' },
    ],
  })
  const appOver = (conductor: ConductorRpc) => createApp({ db: db.db, conductor, log })
  const app = await appOver(core.conductorClient)
  const explain = async (over: FastifyInstance = app): Promise<Answer> => {
    const res = await over.inject({
      method: 'POST',
      url: '/v2/device_profiles/fpga/explain',
      headers: { 'openstack-api-version': 'accelerator 2.6' },
      payload: { hostname: HOST },
    })
    assert.equal(res.statusCode, 200, res.body)
    return res.json()
  }
  return {
    db,
    core,
    appOver,
    explain,
    async close() {
      await app.close()
      await core.stop()
      await bus.close()
      await db.close()
    },
  }
}

const byName = (a: Answer, group: number, n: number) =>
  a.groups[group]!.candidates.find((c) => c.deployable_name === name(n))!

void describe('explain compared with real Placement', { skip }, () => {
  let placement: RunningPlacement
  let s: Awaited<ReturnType<typeof stackOf>>
  const rpOf = async (n: number) =>
    (
      await s.db.db
        .selectFrom('deployables')
        .select('rp_uuid')
        .where('name', '=', name(n))
        .executeTakeFirstOrThrow()
    ).rp_uuid!

  before(async () => {
    placement = await startPlacement()
    s = await stackOf(placement.client)
    const pc = placement.client
    // FPGA 3: Placement reserves its whole inventory (Cyborg's view: fits).
    const r3 = await rpOf(3)
    const p3 = (await pc.getProvider(r3))!
    const inv3 = await pc.getInventories(r3)
    await pc.setInventory(r3, p3.generation, { FPGA: { ...inv3.FPGA!, reserved: 2 } })
    // FPGA 5: Placement lacks the trait that Cyborg's attributes have.
    const r5 = await rpOf(5)
    await pc.setTraits(r5, (await pc.getProvider(r5))!.generation, ['OWNER_CYBORG'])
    // FPGA 7: maintaining in Cyborg only (no sync): Placement still offers it.
    const d7 = await s.db.db
      .selectFrom('deployables')
      .select('device_id')
      .where('name', '=', name(7))
      .executeTakeFirstOrThrow()
    await s.db.db
      .updateTable('devices')
      .set({ status: 'maintaining' })
      .where('id', '=', d7.device_id)
      .execute()
  })
  after(async () => {
    await s?.close()
    await placement?.stop()
  })

  void it('says which candidates Placement offers, and why not where it disagrees', async () => {
    const a = await s.explain()
    assert.deepEqual(a.placement, { configured: true })
    const ok = byName(a, 0, 1)
    assert.deepEqual([ok.rule, ok.placement, ok.placement_reason], ['fits', 'offered', null])
    const reserved = byName(a, 0, 3)
    assert.deepEqual(
      [reserved.rule, reserved.placement, reserved.placement_reason],
      [
        'fits',
        'not_offered',
        'Placement has FPGA total 2, reserved 2 on this provider (inventory reserved)',
      ],
    )
    const trait = byName(a, 0, 5)
    assert.deepEqual(
      [trait.rule, trait.placement, trait.placement_reason],
      ['fits', 'not_offered', 'Placement lacks trait CUSTOM_FPGA_INTEL on this provider (traits)'],
    )
    const own = byName(a, 0, 7)
    assert.equal(own.rule, 'status')
    assert.equal(own.placement, 'offered')
    assert.match(
      own.placement_reason!,
      /^Placement offers this provider; status is Cyborg's own rule/,
    )
    assert.match(own.placement_reason!, /expected/)
    // The GPU is not of the FPGA group's class: both agree, no reason; in the PGPU group it is offered.
    const gpu = byName(a, 0, 0)
    assert.deepEqual(
      [gpu.rule, gpu.placement, gpu.placement_reason],
      ['resource_class', 'not_offered', null],
    )
    const gpu1 = byName(a, 1, 0)
    assert.deepEqual([gpu1.rule, gpu1.placement], ['fits', 'offered'])
    // A trait or a resource class Placement has never heard of: nothing offered, no error.
    for (const g of [2, 3])
      assert.deepEqual(
        a.groups[g]!.candidates.map((c) => c.placement),
        Array(5).fill('not_offered'),
      )
  })

  void it('a fitting provider Placement does not know, and an oversized RPC', async () => {
    const d1 = await s.db.db
      .selectFrom('deployables')
      .select('id')
      .where('name', '=', name(1))
      .executeTakeFirstOrThrow()
    const r1 = await rpOf(1)
    await s.db.db
      .updateTable('deployables')
      .set({ rp_uuid: 'c0ffee00-0000-4000-8000-0000000000f1' })
      .where('id', '=', d1.id)
      .execute()
    try {
      const c = byName(await s.explain(), 0, 1)
      assert.deepEqual(
        [c.rule, c.placement, c.placement_reason],
        [
          'fits',
          'not_offered',
          'Placement has no resource provider for this deployable (provider)',
        ],
      )
    } finally {
      await s.db.db
        .updateTable('deployables')
        .set({ rp_uuid: r1 })
        .where('id', '=', d1.id)
        .execute()
    }
    await assert.rejects(
      s.core.conductorClient.placementExplain({
        providers: Array(51).fill('c0ffee00-0000-4000-8000-0000000000f1') as string[],
      }),
      { name: 'InvalidInputError' },
    )
  })

  void it('a Placement outage is a note; explain still answers from Cyborg', async () => {
    const port = await freePort()
    const down = createPlacementClient({
      endpoint: `http://127.0.0.1:${port}`,
      token: 'admin',
      timeoutMs: 2_000,
    })
    const t = await stackOf(down)
    try {
      const a = await t.explain()
      assert.equal(a.placement?.configured, true)
      assert.ok(a.placement?.error, JSON.stringify(a.placement))
      assert.equal(byName(a, 0, 1).rule, 'fits')
      assert.equal(byName(a, 0, 1).placement, null)
    } finally {
      await t.close()
    }
  })

  void it('without [placement], and with a conductor older than 1.6, Placement is left out', async () => {
    const t = await stackOf()
    try {
      const a = await t.explain()
      assert.deepEqual(a.placement, { configured: false })
      for (const g of a.groups)
        for (const c of g.candidates)
          assert.deepEqual([c.placement, c.placement_reason], [null, null])
      assert.equal(byName(a, 0, 1).rule, 'fits')
      // A 1.5 conductor: the bus answers RPC_NO_METHOD.
      const old = new Proxy(t.core.conductorClient, {
        get: (target, prop, receiver) =>
          prop === 'placementExplain'
            ? async () => {
                throw new NotFoundError('no RPC method cyborg.conductor.placementExplain', {
                  code: 'RPC_NO_METHOD',
                })
              }
            : (Reflect.get(target, prop, receiver) as unknown),
      })
      const app = await t.appOver(old)
      try {
        const b = await t.explain(app)
        assert.equal(b.placement, null)
        assert.equal(byName(b, 0, 1).placement, null)
      } finally {
        await app.close()
      }
    } finally {
      await t.close()
    }
  })
})
