import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { fault, HOST, startStack, type Stack } from './stack.js'

const json = { 'content-type': 'application/json' }
const UUID = '7d3c1c5e-2b0a-4f4e-9a57-8f9e0d1c2b3a'

void describe('v2 device profiles', () => {
  let s: Stack
  before(async () => {
    s = await startStack()
  })
  after(() => s.close())

  const create = (body: unknown) =>
    s.request({
      method: 'POST',
      url: '/v2/device_profiles',
      headers: json,
      payload: JSON.stringify(body),
    })
  const names = async () =>
    (
      (await s.request({ url: '/v2/device_profiles' })).json().device_profiles as { name: string }[]
    ).map((p) => p.name)

  void it('create (the CLI body) → 201 bare profile; show → wrapped; list', async () => {
    const res = await create([
      {
        groups: [{ 'resources:FPGA': 1, 'trait:CUSTOM_FAKE_DEVICE': 'required' }],
        description: null,
        name: 'dp-fake',
      },
    ])
    assert.equal(res.statusCode, 201, res.body)
    const dp = res.json()
    assert.deepEqual(Object.keys(dp).sort(), [
      'created_at',
      'description',
      'groups',
      'links',
      'name',
      'updated_at',
      'uuid',
    ])
    assert.equal(dp.name, 'dp-fake')
    assert.equal(dp.description, null)
    assert.deepEqual(dp.groups, [{ 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required' }])
    assert.deepEqual(dp.links, [
      { href: `http://${HOST}/v2/device_profiles/${dp.uuid}`, rel: 'self' },
    ])

    const shown = await s.request({ url: `/v2/device_profiles/${dp.uuid}` })
    assert.equal(shown.statusCode, 200)
    assert.deepEqual(shown.json(), { device_profile: dp })
    const listed = (await s.request({ url: '/device_profiles' })).json()
    assert.deepEqual(listed, { device_profiles: [dp] })
  })

  void it('a client-chosen uuid is kept; duplicates of name or uuid are 409', async () => {
    const res = await create([
      { name: 'dp-uuid', uuid: UUID, groups: [{ 'resources:GPU': '1' }], description: 'mine' },
    ])
    assert.equal(res.statusCode, 201, res.body)
    assert.equal(res.json().uuid, UUID)
    assert.equal(res.json().description, 'mine')
    const dupName = await create([{ name: 'dp-uuid', groups: [{ 'resources:GPU': '1' }] }])
    assert.equal(dupName.statusCode, 409)
    assert.match(fault(dupName), /name/)
    const dupUuid = await create([
      { name: 'dp-other', uuid: UUID, groups: [{ 'resources:GPU': '1' }] },
    ])
    assert.equal(dupUuid.statusCode, 409)
    assert.match(fault(dupUuid), /uuid/)
  })

  void it('bad bodies are 400 naming the field, and nothing is stored', async () => {
    const before = await names()
    const cases: [unknown, RegExp][] = [
      [[{ name: '', groups: [{ 'resources:FPGA': '1' }] }], /'name'/],
      [[{ name: 'a'.repeat(256), groups: [{ 'resources:FPGA': '1' }] }], /'name'/],
      [[{ name: 'x', groups: [] }], /'groups'/],
      [[{ name: 'x', groups: [{ 'trait:FOO': 'required' }] }], /'groups\[0\]\["trait:FOO"\]'/],
      [[{ name: 'x', groups: [{ 'resources:FPGA': '0' }] }], /'groups\[0\]\["resources:FPGA"\]'/],
      [
        [
          { name: 'x', groups: [{ 'resources:FPGA': '1' }] },
          { name: 'y', groups: [{ 'resources:FPGA': '1' }] },
        ],
        /'body'/,
      ],
      [{ name: 'x', groups: [{ 'resources:FPGA': '1' }] }, /'body'/],
    ]
    for (const [body, re] of cases) {
      const res = await create(body)
      assert.equal(res.statusCode, 400, JSON.stringify(body))
      assert.match(fault(res), re)
    }
    assert.deepEqual(await names(), before)
  })

  void it('filters the list by ?name=a,b', async () => {
    const res = await s.request({ url: '/v2/device_profiles?name=dp-fake,dp-uuid,nothing' })
    assert.deepEqual(
      res
        .json()
        .device_profiles.map((p: { name: string }) => p.name)
        .sort(),
      ['dp-fake', 'dp-uuid'],
    )
    assert.deepEqual((await s.request({ url: '/v2/device_profiles?name=nothing' })).json(), {
      device_profiles: [],
    })
  })

  void it('pages the list with limit and marker like the other lists (issue 27)', async () => {
    type P = { uuid: string; name: string }
    const page = async (q: string) => {
      const res = await s.request({ url: `/v2/device_profiles?${q}` })
      assert.equal(res.statusCode, 200, `${q}: ${res.body}`)
      return res.json().device_profiles as P[]
    }
    const all = await page('')
    assert.ok(all.length >= 2, 'two profiles to page through')
    const first = await page('limit=1')
    assert.deepEqual(first, [all[0]])
    const walked: P[] = [...first]
    for (;;) {
      const next = await page(`limit=1&marker=${walked.at(-1)!.uuid}`)
      if (next.length === 0) break
      walked.push(...next)
    }
    assert.deepEqual(walked, all)
    const byName = await page('sort_key=name&sort_dir=desc&limit=2')
    assert.deepEqual(
      byName.map((p) => p.name),
      all
        .map((p) => p.name)
        .sort()
        .reverse()
        .slice(0, 2),
    )
    assert.deepEqual(
      (await page(`name=${all[1]!.name}&limit=5`)).map((p) => p.name),
      [all[1]!.name],
    )
    for (const [q, field] of [
      ['limit=0', 'limit'],
      ['limit=x', 'limit'],
      [`marker=${UUID.replace('7d3c', '0000')}`, 'marker'],
      ['sort_key=groups', 'sort_key'],
    ]) {
      const res = await s.request({ url: `/v2/device_profiles?${q}` })
      assert.equal(res.statusCode, 400, `${q}: ${res.body}`)
      assert.match(fault(res), new RegExp(`'${field}'`), q)
    }
  })

  void it('gets by name from 2.2 on; a name below 2.2 is 406; unknown is 404', async () => {
    const byName = await s.request({ url: '/v2/device_profiles/dp-uuid', version: '2.2' })
    assert.equal(byName.statusCode, 200)
    assert.equal(byName.json().device_profile.uuid, UUID)
    const low = await s.request({ url: '/v2/device_profiles/dp-uuid', version: '2.1' })
    assert.equal(low.statusCode, 406)
    assert.match(fault(low), /2\.2/)
    assert.equal(
      (await s.request({ url: '/v2/device_profiles/nope', version: '2.3' })).statusCode,
      404,
    )
    assert.equal(
      (await s.request({ url: '/v2/device_profiles/5a0c4b3e-1111-4222-8333-944455556666' }))
        .statusCode,
      404,
    )
  })

  void it('deletes by uuid, by name, and by ?value=a,b; unknown → 404 deleting nothing; empty → 400', async () => {
    for (const name of ['dp-a', 'dp-b', 'dp-c']) {
      assert.equal((await create([{ name, groups: [{ 'resources:FPGA': '1' }] }])).statusCode, 201)
    }
    const del = (url: string) => s.request({ method: 'DELETE', url })

    const unknown = await del('/v2/device_profiles?value=dp-a,missing-one')
    assert.equal(unknown.statusCode, 404)
    assert.match(fault(unknown), /missing-one/)
    assert.ok((await names()).includes('dp-a'), 'all or nothing')

    assert.equal((await del('/v2/device_profiles?value=')).statusCode, 400)
    assert.equal((await del('/v2/device_profiles')).statusCode, 400)

    const many = await del('/v2/device_profiles?value=dp-a,dp-b')
    assert.equal(many.statusCode, 204, many.body)
    assert.equal(many.body, '')
    assert.equal((await del('/device_profiles/dp-c')).statusCode, 204)
    assert.equal((await del(`/v2/device_profiles/${UUID}`)).statusCode, 204)
    assert.equal((await del(`/v2/device_profiles/${UUID}`)).statusCode, 404)
    assert.deepEqual(await names(), ['dp-fake'])
    assert.equal((await s.request({ url: `/v2/device_profiles/${UUID}` })).statusCode, 404)
  })
})
