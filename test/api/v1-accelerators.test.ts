/** `/v1/accelerators`, read side: the list, its filters and pages, one accelerator, and its errors. */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { fault, HOST, startStack, type Stack } from './stack.js'

interface AcceleratorView {
  uuid: string
  name: string
  type: string
  device_type: string
  capability: string
  hostname: string
  lifecycle: string
  attached_to: string[]
  acc_specs: {
    remote: number
    num: number
    device_type: string
    acc_capability: Record<string, unknown>
  }
  links: { href: string; rel: string }[]
  [k: string]: unknown
}

const json = { 'content-type': 'application/json' }
const VM = '1e570000-0000-4000-8000-000000000001'

void describe('v1 accelerators (read)', () => {
  let s: Stack
  let all: AcceleratorView[]
  before(async () => {
    s = await startStack({ autoActivate: true })
    const res = await s.request({ url: '/v1/accelerators' })
    assert.equal(res.statusCode, 200, res.body)
    all = res.json().accelerators
  })
  after(() => s?.close())

  void it('lists every deployable of the inventory once, in the v1 shape', async () => {
    const deployables = (await s.request({ url: '/v2/deployables' })).json().deployables as {
      uuid: string
      name: string
    }[]
    assert.deepEqual(
      all.map((a) => [a.uuid, a.name]),
      deployables.map((d) => [d.uuid, d.name]),
    )
    const fake = all.find((a) => a.name === 'node1_FakeDevice')!
    assert.deepEqual(Object.keys(fake).sort(), [
      'acc_specs',
      'attached_to',
      'attachments',
      'capability',
      'created_at',
      'description',
      'device_type',
      'health',
      'health_reason',
      'health_updated_at',
      'hostname',
      'lifecycle',
      'lifecycle_reason',
      'links',
      'name',
      'product_id',
      'type',
      'updated_at',
      'uuid',
      'vendor_id',
    ])
    assert.equal(fake.type, 'FPGA')
    assert.equal(fake.device_type, 'FPGA')
    assert.equal(fake.capability, 'CUSTOM_FAKE_DEVICE')
    assert.equal(fake.hostname, 'node1')
    assert.equal(fake.lifecycle, 'active')
    assert.deepEqual([fake.health, fake.health_reason, fake.health_updated_at], ['ok', null, null])
    assert.deepEqual(fake.acc_specs, {
      remote: 0,
      num: 16,
      device_type: 'FPGA',
      acc_capability: { num: 16, traits: ['CUSTOM_FAKE_DEVICE'] },
    })
    assert.deepEqual(fake.attached_to, [])
    assert.deepEqual(fake.links, [
      { href: `http://${HOST}/v1/accelerators/${fake.uuid}`, rel: 'self' },
    ])
  })

  void it('filters by device_type and hostname, and pages with a next link', async () => {
    const node2 = (await s.request({ url: '/v1/accelerators?hostname=node2' })).json()
      .accelerators as AcceleratorView[]
    assert.deepEqual(
      node2.map((a) => a.uuid),
      all.filter((a) => a.hostname === 'node2').map((a) => a.uuid),
    )
    assert.equal(
      (await s.request({ url: '/v1/accelerators?hostname=nowhere' })).json().accelerators.length,
      0,
    )
    const type = all[0]!.type
    const byType = (await s.request({ url: `/v1/accelerators?device_type=${type}` })).json()
      .accelerators as AcceleratorView[]
    assert.deepEqual(
      byType.map((a) => a.uuid),
      all.filter((a) => a.type === type).map((a) => a.uuid),
    )

    const first = (await s.request({ url: '/v1/accelerators?limit=2&sort_key=name' })).json()
    const byName = [...all].sort((a, b) => a.name.localeCompare(b.name))
    assert.deepEqual(
      first.accelerators.map((a: AcceleratorView) => a.uuid),
      byName.slice(0, 2).map((a) => a.uuid),
    )
    assert.equal(
      first.next,
      `http://${HOST}/v1/accelerators?limit=2&sort_key=name&marker=${byName[1]!.uuid}`,
    )
    const second = (await s.request({ url: first.next.replace(`http://${HOST}`, '') })).json()
    assert.deepEqual(
      second.accelerators.map((a: AcceleratorView) => a.uuid),
      byName.slice(2, 4).map((a) => a.uuid),
    )
    const whole = (await s.request({ url: `/v1/accelerators?limit=${all.length + 1}` })).json()
    assert.equal(whole.next, undefined, 'a page that is not full is the last')
  })

  void it('shows one accelerator, with the instances that bound requests attach it to', async () => {
    const fake = all.find((a) => a.name === 'node1_FakeDevice')!
    await s.request({
      method: 'POST',
      url: '/v2/device_profiles',
      headers: json,
      payload: JSON.stringify([{ name: 'v1-one', groups: [{ 'resources:FPGA': '1' }] }]),
    })
    const created = await s.request({
      method: 'POST',
      url: '/v2/accelerator_requests',
      headers: json,
      payload: JSON.stringify({ device_profile_name: 'v1-one' }),
    })
    const [arq] = created.json().arqs as { uuid: string }[]
    const bind = [
      { path: '/hostname', op: 'add', value: 'node1' },
      { path: '/instance_uuid', op: 'add', value: VM },
    ]
    const bound = await s.request({
      method: 'PATCH',
      url: '/v2/accelerator_requests',
      headers: json,
      payload: JSON.stringify({ [arq!.uuid]: bind }),
    })
    assert.equal(bound.statusCode, 202, bound.body)
    const one = await s.request({ url: `/v1/accelerators/${fake.uuid}` })
    assert.equal(one.statusCode, 200)
    assert.deepEqual(one.json(), {
      ...fake,
      attached_to: [VM],
      attachments: [
        { arq_uuid: arq!.uuid, instance_uuid: VM, hostname: 'node1', api: 'v2', state: 'Bound' },
      ],
      updated_at: one.json().updated_at,
    })
  })

  void it('answers 404 for an unknown accelerator and 400 naming the bad parameter', async () => {
    for (const id of ['0b0e0000-0000-4000-8000-00000000dead', 'not-a-uuid']) {
      const res = await s.request({ url: `/v1/accelerators/${id}` })
      assert.equal(res.statusCode, 404)
      assert.match(fault(res), /accelerator .* not found/)
    }
    for (const [query, field] of [
      ['limit=0', 'limit'],
      ['sort_key=vendor', 'sort_key'],
      ['sort_dir=up', 'sort_dir'],
      ['marker=nope', 'marker'],
    ]) {
      const res = await s.request({ url: `/v1/accelerators?${query}` })
      assert.equal(res.statusCode, 400, query)
      assert.match(fault(res), new RegExp(field!), query)
    }
    assert.equal((await s.request({ method: 'DELETE', url: '/v1/accelerators' })).statusCode, 405)
  })

  void it('is listed by version discovery', async () => {
    const root = (await s.request({ url: '/' })).json()
    assert.deepEqual(
      root.versions.map((v: { id: string }) => v.id),
      ['v2', 'v1'],
    )
    assert.equal(root.default_version.id, 'v2')
    const v1 = (await s.request({ url: '/v1' })).json()
    assert.deepEqual(v1, {
      id: 'v1.0',
      status: 'SUPPORTED',
      min_version: '',
      max_version: '',
      links: [{ href: `http://${HOST}/v1/`, rel: 'self' }],
    })
  })
})
