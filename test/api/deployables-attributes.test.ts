import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { fault, HOST, startStack, type Stack } from './stack.js'

interface DeployableView {
  uuid: string
  name: string
  device_id: number
  attributes_list: string
  links: { href: string; rel: string }[]
  [k: string]: unknown
}

const json = { 'content-type': 'application/json' }

void describe('v2 deployables and attributes', () => {
  let s: Stack
  let all: DeployableView[]
  let fake: DeployableView
  let fakeId: number
  before(async () => {
    s = await startStack()
    all = (await s.request({ url: '/v2/deployables' })).json().deployables
    fake = all.find((d) => d.name === 'node1_FakeDevice')!
    const attrs = (await s.request({ url: '/v2/attributes?key=rc' })).json().attributes as {
      deployable_id: number
    }[]
    fakeId = attrs[0]!.deployable_id
  })
  after(() => s.close())

  void it('lists deployables with attributes_list as a JSON string and self + bookmark links', () => {
    assert.equal(all.length, 5)
    assert.deepEqual(Object.keys(fake).sort(), [
      'attributes_list',
      'bitstream_id',
      'created_at',
      'device_id',
      'driver_name',
      'links',
      'name',
      'num_accelerators',
      'parent_id',
      'root_id',
      'rp_uuid',
      'updated_at',
      'uuid',
    ])
    assert.equal(fake.attributes_list, '[{"rc": "FPGA"}, {"trait0": "CUSTOM_FAKE_DEVICE"}]')
    assert.equal(fake.num_accelerators, 16)
    assert.equal(fake.driver_name, 'fake')
    assert.equal(fake.parent_id, null)
    assert.equal(typeof fake.device_id, 'number')
    assert.deepEqual(fake.links, [
      { href: `http://${HOST}/v2/deployables/${fake.uuid}`, rel: 'self' },
      { href: `http://${HOST}/deployables/${fake.uuid}`, rel: 'bookmark' },
    ])
    for (const d of all) assert.equal(JSON.parse(d.attributes_list).length, 2)
  })

  void it('shows one deployable; pages the list', async () => {
    const res = await s.request({ url: `/deployables/${fake.uuid}` })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(res.json(), fake)
    const page = (await s.request({ url: `/v2/deployables?limit=2&marker=${all[0]!.uuid}` })).json()
      .deployables
    assert.deepEqual(page, all.slice(1, 3))
    const byName = (await s.request({ url: '/v2/deployables?sort_key=name&sort_dir=desc' })).json()
      .deployables
    assert.deepEqual(
      byName.map((d: DeployableView) => d.name),
      all
        .map((d) => d.name)
        .sort()
        .reverse(),
    )
    assert.equal(
      (await s.request({ url: '/v2/deployables/3c0b9f5e-98a4-4f0e-bb1c-1f2a3b4c5d6e' })).statusCode,
      404,
    )
  })

  void it('lists and filters attributes', async () => {
    const every = (await s.request({ url: '/v2/attributes' })).json().attributes
    assert.equal(every.length, 10)
    const mine = (await s.request({ url: `/v2/attributes?deployable_id=${fakeId}` })).json()
      .attributes
    assert.deepEqual(
      mine.map((a: { key: string }) => a.key),
      ['rc', 'trait0'],
    )
    const one = mine[0]
    assert.deepEqual(Object.keys(one).sort(), [
      'created_at',
      'deployable_id',
      'key',
      'links',
      'updated_at',
      'uuid',
      'value',
    ])
    assert.deepEqual(one.links, [{ href: `http://${HOST}/v2/attributes/${one.uuid}`, rel: 'self' }])
    const rcOfMine = (
      await s.request({ url: `/v2/attributes?deployable_id=${fakeId}&key=rc` })
    ).json().attributes
    assert.deepEqual(rcOfMine, [one])
    assert.deepEqual((await s.request({ url: `/v2/attributes/${one.uuid}` })).json(), one)
  })

  void it('creates (deployable_id as int or string), conflicts, and deletes attributes', async () => {
    const create = (body: unknown) =>
      s.request({
        method: 'POST',
        url: '/v2/attributes',
        headers: json,
        payload: JSON.stringify(body),
      })
    const created = await create({
      deployable_id: String(fakeId),
      key: 'trait1',
      value: 'CUSTOM_EXTRA',
    })
    assert.equal(created.statusCode, 201, created.body)
    const attr = created.json()
    assert.equal(attr.deployable_id, fakeId)
    assert.equal(attr.key, 'trait1')
    assert.equal(attr.value, 'CUSTOM_EXTRA')
    assert.deepEqual((await s.request({ url: `/v2/attributes/${attr.uuid}` })).json(), attr)

    const dep = (await s.request({ url: `/v2/deployables/${fake.uuid}` })).json()
    assert.equal(
      dep.attributes_list,
      '[{"rc": "FPGA"}, {"trait0": "CUSTOM_FAKE_DEVICE"}, {"trait1": "CUSTOM_EXTRA"}]',
    )

    const dup = await create({ deployable_id: fakeId, key: 'trait1', value: 'x' })
    assert.equal(dup.statusCode, 409, dup.body)
    assert.match(fault(dup), /key/)
    const orphan = await create({ deployable_id: 999999, key: 'k', value: 'v' })
    assert.equal(orphan.statusCode, 404, orphan.body)
    assert.match(fault(orphan), /deployable_id/)
    const bad = await create({ deployable_id: 0, key: 'k', value: 'v' })
    assert.equal(bad.statusCode, 400)
    assert.match(fault(bad), /'deployable_id'/)

    const del = await s.request({ method: 'DELETE', url: `/v2/attributes/${attr.uuid}` })
    assert.equal(del.statusCode, 204)
    assert.equal(del.body, '')
    assert.equal(
      (await s.request({ method: 'DELETE', url: `/attributes/${attr.uuid}` })).statusCode,
      404,
    )
    assert.equal((await s.request({ url: `/v2/attributes/${attr.uuid}` })).statusCode, 404)
  })
})
