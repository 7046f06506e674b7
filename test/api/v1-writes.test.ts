/**
 * `/v1/accelerators` writes in-process over HTTP: attach (`PUT /{uuid}`), detach (`DELETE /{uuid}`),
 * the spec (`PUT /{uuid}/acc_specs` with ETag/If-Match) and `POST /{uuid}/ready`, with every
 * status code the seed names, two attaches racing for one accelerator, and v1 and v2 blocking
 * each other.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { inventoryHash } from '../../src/rpc/inventory-hash.js'
import { STORM_HOST, stormDevices } from '../support/storm-inventory.js'
import { fault, serveCleaningAgent, startStack, type Stack } from './stack.js'

const json = { 'content-type': 'application/json' }
const vm = (n: number) => `7e571000-0000-4000-8000-${String(n).padStart(12, '0')}`
const MISSING = '0b0e0000-0000-4000-8000-00000000dead'

interface View {
  uuid: string
  name: string
  lifecycle: string
  attached_to: string[]
  attachments: {
    arq_uuid: string
    instance_uuid: string | null
    hostname: string | null
    api: string
    state: string
  }[]
  acc_specs: Record<string, unknown>
}

void describe('v1 accelerators (writes)', () => {
  let s: Stack
  let fake: View
  let single: View
  const put = (url: string, body: unknown, headers: Record<string, string> = {}) =>
    s.request({
      method: 'PUT',
      url,
      headers: { ...json, ...headers },
      payload: JSON.stringify(body),
    })
  /** A detach; it returns once the released unit's clean has run (docs/cleaning.md). */
  const del = async (url: string) => {
    const res = await s.request({ method: 'DELETE', url })
    await s.core.conductor!.cleaningIdle()
    return res
  }

  before(async () => {
    s = await startStack({ autoActivate: false })
    await serveCleaningAgent(s, STORM_HOST)
    // One accelerator of one unit (a TEST_PCI handle), active: what two attaches race for.
    const list = stormDevices(1, 1)
    await s.core.conductorClient.reportInventory({
      host: STORM_HOST,
      hash: inventoryHash(list),
      devices: list,
      autoActivate: true,
    })
    const all = (await s.request({ url: '/v1/accelerators' })).json().accelerators as View[]
    fake = all.find((a) => a.name === 'node1_FakeDevice')!
    single = all.find((a) => a.name.startsWith(STORM_HOST))!
  })
  after(() => s?.close())

  void it('ready: an inactive accelerator is installed by its agent and becomes active (200); 404 for an unknown one', async () => {
    assert.equal(fake.lifecycle, 'inactive')
    const refused = await put(`/v1/accelerators/${fake.uuid}`, { instance_uuid: vm(1) })
    assert.equal(refused.statusCode, 409)
    assert.match(fault(refused), /inactive.*mark it ready/)
    const ready = await s.request({ method: 'POST', url: `/v1/accelerators/${fake.uuid}/ready` })
    assert.equal(ready.statusCode, 200, ready.body)
    assert.equal(ready.json().lifecycle, 'active')
    const again = await s.request({ method: 'POST', url: `/v1/accelerators/${fake.uuid}/ready` })
    assert.equal(again.statusCode, 409)
    assert.match(fault(again), /active/)
    assert.equal(
      (await s.request({ method: 'POST', url: `/v1/accelerators/${MISSING}/ready` })).statusCode,
      404,
    )
  })

  void it('attach to an instance and to a host (200), idempotent, shown in attached_to and attachments; detach (204)', async () => {
    const res = await put(`/v1/accelerators/${fake.uuid}`, {
      instance_uuid: vm(1),
      name: fake.name,
      uuid: fake.uuid,
    })
    assert.equal(res.statusCode, 200, res.body)
    const view = res.json() as View
    assert.deepEqual(view.attached_to, [vm(1)])
    assert.equal(view.attachments[0]!.api, 'v1')
    assert.equal(view.attachments[0]!.state, 'Bound')
    const again = await put(`/v1/accelerators/${fake.uuid}`, { instance_uuid: vm(1) })
    assert.equal(again.statusCode, 200)
    assert.deepEqual(
      (again.json() as View).attachments.map((a) => a.arq_uuid),
      view.attachments.map((a) => a.arq_uuid),
    )
    const host = await put(`/v1/accelerators/${fake.uuid}`, { hostname: 'node1' })
    assert.equal(host.statusCode, 200, host.body)
    assert.deepEqual((host.json() as View).attached_to, [vm(1), 'host:node1'])
    // v2 does not list a v1 attachment as an accelerator request.
    const arqs = (await s.request({ url: '/v2/accelerator_requests' })).json().arqs as {
      uuid: string
    }[]
    assert.equal(
      arqs.some((a) => view.attachments.some((x) => x.arq_uuid === a.uuid)),
      false,
    )
    // Detach one instance's attachment, then the rest; a second detach is a no-op.
    assert.equal(
      (await del(`/v1/accelerators/${fake.uuid}?instance_uuid=${vm(1)}`)).statusCode,
      204,
    )
    assert.deepEqual(
      (await s.request({ url: `/v1/accelerators/${fake.uuid}` })).json().attached_to,
      ['host:node1'],
    )
    assert.equal((await del(`/v1/accelerators/${fake.uuid}`)).statusCode, 204)
    assert.equal((await del(`/v1/accelerators/${fake.uuid}`)).statusCode, 204)
    assert.deepEqual(
      (await s.request({ url: `/v1/accelerators/${fake.uuid}` })).json().attached_to,
      [],
    )
  })

  void it('attach and detach answer 400 naming the field, 404 for an unknown accelerator', async () => {
    const cases: [unknown, string][] = [
      [{}, 'instance_uuid'],
      [{ instance_uuid: vm(1), hostname: 'node1' }, 'instance_uuid'],
      [{ instance_uuid: 'nope' }, 'instance_uuid'],
      [{ hostname: '' }, 'hostname'],
      [{ hostname: 'elsewhere' }, 'hostname'],
      [{ instance_uuid: vm(1), name: 'other' }, 'name'],
      [{ instance_uuid: vm(1), uuid: MISSING }, 'uuid'],
      [{ instance_uuid: vm(1), colour: 'red' }, 'colour'],
      [[vm(1)], 'body'],
    ]
    for (const [body, field] of cases) {
      const res = await put(`/v1/accelerators/${fake.uuid}`, body)
      assert.equal(res.statusCode, 400, JSON.stringify(body))
      assert.match(fault(res), new RegExp(`'${field}'`), JSON.stringify(body))
    }
    assert.equal(
      (await put(`/v1/accelerators/${MISSING}`, { instance_uuid: vm(1) })).statusCode,
      404,
    )
    assert.equal(
      (await put('/v1/accelerators/not-a-uuid', { instance_uuid: vm(1) })).statusCode,
      404,
    )
    assert.equal((await del(`/v1/accelerators/${MISSING}`)).statusCode, 404)
    const bad = await del(`/v1/accelerators/${fake.uuid}?instance_uuid=nope`)
    assert.equal(bad.statusCode, 400)
    assert.match(fault(bad), /'instance_uuid'/)
  })

  void it('two attaches racing for one accelerator: exactly one wins (200), the other is 409', async () => {
    const [a, b] = await Promise.all([
      put(`/v1/accelerators/${single.uuid}`, { instance_uuid: vm(10) }),
      put(`/v1/accelerators/${single.uuid}`, { instance_uuid: vm(11) }),
    ])
    assert.deepEqual([a.statusCode, b.statusCode].sort(), [200, 409])
    const loser = a.statusCode === 409 ? a : b
    assert.match(fault(loser), /already attached: instance 7e571000-.* \(v1 attachment/)
    assert.equal((await del(`/v1/accelerators/${single.uuid}`)).statusCode, 204)
  })

  void it('a v1 attach blocks a v2 bind, and a v2 bind blocks a v1 attach and a v1 detach (409)', async () => {
    const rp = (await s.request({ url: `/v2/deployables/${single.uuid}` })).json().rp_uuid as string
    await s.request({
      method: 'POST',
      url: '/v2/device_profiles',
      headers: json,
      payload: JSON.stringify([{ name: 'storm1', groups: [{ 'resources:FPGA': '1' }] }]),
    })
    const newArq = async () =>
      (
        (
          await s.request({
            method: 'POST',
            url: '/v2/accelerator_requests',
            headers: json,
            payload: JSON.stringify({ device_profile_name: 'storm1' }),
          })
        ).json().arqs as { uuid: string }[]
      )[0]!.uuid
    const bind = (arq: string, instance: string) =>
      s.request({
        method: 'PATCH',
        url: '/v2/accelerator_requests',
        headers: json,
        payload: JSON.stringify({
          [arq]: [
            { path: '/hostname', op: 'add', value: STORM_HOST },
            { path: '/device_rp_uuid', op: 'add', value: rp },
            { path: '/instance_uuid', op: 'add', value: instance },
          ],
        }),
      })
    assert.equal(
      (await put(`/v1/accelerators/${single.uuid}`, { instance_uuid: vm(20) })).statusCode,
      200,
    )
    const first = await newArq()
    await bind(first, vm(21))
    assert.equal(
      (await s.request({ url: `/v2/accelerator_requests/${first}` })).json().state,
      'BindFailed',
    )
    assert.equal((await del(`/v1/accelerators/${single.uuid}`)).statusCode, 204)

    const second = await newArq()
    await bind(second, vm(22))
    assert.equal(
      (await s.request({ url: `/v2/accelerator_requests/${second}` })).json().state,
      'Bound',
    )
    const attach = await put(`/v1/accelerators/${single.uuid}`, { instance_uuid: vm(23) })
    assert.equal(attach.statusCode, 409)
    assert.match(fault(attach), new RegExp(`instance ${vm(22)} \\(accelerator request ${second}`))
    const detach = await del(`/v1/accelerators/${single.uuid}`)
    assert.equal(detach.statusCode, 409)
    assert.match(fault(detach), /held by accelerator requests made outside v1/)
    assert.deepEqual(
      (await s.request({ url: `/v1/accelerators/${single.uuid}` }))
        .json()
        .attachments.map((a: { api: string }) => a.api),
      ['v2'],
    )
    assert.equal(
      (await s.request({ method: 'DELETE', url: `/v2/accelerator_requests?instance=${vm(22)}` }))
        .statusCode,
      204,
    )
  })

  void it('acc_specs: ETag on GET, If-Match honoured (200 with a new ETag), stale If-Match 409, bad spec 400, 404', async () => {
    const url = `/v1/accelerators/${fake.uuid}`
    const got = await s.request({ url })
    const etag = got.headers.etag as string
    assert.match(etag, /^"[0-9a-f]{20}"$/)
    const spec = {
      remote: 0,
      num: 1,
      device_type: 'CRYPTO',
      acc_capability: { num: 2, ipsec: { aes: { '3des': 50, num: 1 } } },
    }
    const ok = await put(`${url}/acc_specs`, { acc_specs: spec }, { 'if-match': etag })
    assert.equal(ok.statusCode, 200, ok.body)
    assert.deepEqual(ok.json().acc_specs, spec)
    const fresh = ok.headers.etag as string
    assert.notEqual(fresh, etag)
    assert.equal((await s.request({ url })).headers.etag, fresh)
    const stale = await put(`${url}/acc_specs`, { acc_specs: { num: 3 } }, { 'if-match': etag })
    assert.equal(stale.statusCode, 409)
    assert.match(fault(stale), /another process updated the spec/)
    assert.deepEqual((await s.request({ url })).json().acc_specs, spec)
    // Without If-Match the write is unconditional.
    assert.equal((await put(`${url}/acc_specs`, { acc_specs: { num: 4 } })).statusCode, 200)
    for (const [body, field] of [
      [{}, 'acc_specs'],
      [{ acc_specs: { remote: 2 } }, 'acc_specs.remote'],
      [{ acc_specs: { num: -1 } }, 'acc_specs.num'],
      [{ acc_specs: { device_type: 7 } }, 'acc_specs.device_type'],
      [{ acc_specs: { acc_capability: [] } }, 'acc_specs.acc_capability'],
      [{ acc_specs: { colour: 'red' } }, 'acc_specs.colour'],
      [{ acc_specs: {}, extra: 1 }, 'extra'],
    ] as const) {
      const res = await put(`${url}/acc_specs`, body)
      assert.equal(res.statusCode, 400, JSON.stringify(body))
      assert.match(fault(res), new RegExp(`'${field.replace('.', '\\.')}'`), JSON.stringify(body))
    }
    assert.equal(
      (await put(`/v1/accelerators/${MISSING}/acc_specs`, { acc_specs: {} })).statusCode,
      404,
    )
  })
})
