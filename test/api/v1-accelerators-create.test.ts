/**
 * `POST /v1/accelerators` and `POST /v1/accelerators/{uuid}` over HTTP (in-process), against a real
 * conductor and an agent (node1) that runs the fake and remote drivers, with auto_activate on.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { fault, HOST, startStack, type Stack } from './stack.js'

const json = { 'content-type': 'application/json' }
const U1 = '8e45a2ea-5364-4b0d-a252-bf8becaa606e'
const U2 = '5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f'

void describe('v1 accelerators (create: remote accelerators)', () => {
  let s: Stack
  const post = (payload: unknown, url = '/v1/accelerators') =>
    s.request({ method: 'POST', url, headers: json, payload: JSON.stringify(payload) })
  /** A 400 whose message names `field`. */
  const badRequest = async (payload: unknown, field: string, url?: string) => {
    const res = await post(payload, url)
    assert.equal(res.statusCode, 400, res.body)
    assert.match(fault(res), new RegExp(`field '${field}'`))
    return fault(res)
  }

  before(async () => {
    s = await startStack({ autoActivate: true, enabledDrivers: ['fake', 'remote'] })
  })
  after(() => s?.close())

  void it('201, empty body, Location of the new accelerator; then it is in the v1 and v2 views, inactive', async () => {
    const res = await post({ name: 'IPSec Card', uuid: U1 })
    assert.equal(res.statusCode, 201, res.body)
    assert.equal(res.body, '')
    assert.equal(res.headers.location, `http://${HOST}/v1/accelerators/${U1}`)

    const one = await s.request({ url: `/v1/accelerators/${U1}` })
    assert.equal(one.statusCode, 200, one.body)
    const view = one.json() as Record<string, unknown>
    assert.deepEqual(
      [view.uuid, view.name, view.type, view.hostname, view.lifecycle, view.device_type],
      [U1, 'IPSec Card', 'REMOTE', 'node1', 'inactive', 'CUSTOM_REMOTE_ACCELERATOR'],
    )
    const deployables = (await s.request({ url: '/v2/deployables' })).json().deployables as {
      uuid: string
      name: string
    }[]
    assert.ok(deployables.some((d) => d.uuid === U1 && d.name === 'IPSec Card'))
    const devices = (await s.request({ url: '/v2/devices?type=REMOTE' })).json().devices as {
      type: string
      hostname: string
    }[]
    assert.deepEqual(
      devices.map((d) => [d.type, d.hostname]),
      [['REMOTE', 'node1']],
    )
  })

  void it('POST /v1/accelerators/{uuid} takes the uuid from the path; without any uuid one is made', async () => {
    const res = await post({ name: 'rack card 2' }, `/v1/accelerators/${U2.toUpperCase()}`)
    assert.equal(res.statusCode, 201, res.body)
    assert.equal(res.headers.location, `http://${HOST}/v1/accelerators/${U2}`)
    const same = await post({ name: 'rack card 3', uuid: U2 }, `/v1/accelerators/${U2}`)
    assert.equal(same.statusCode, 409, same.body)

    const generated = await post({ name: 'rack card 4' })
    assert.equal(generated.statusCode, 201, generated.body)
    const location = String(generated.headers.location)
    assert.match(location, /\/v1\/accelerators\/[0-9a-f-]{36}$/)
    const got = await s.request({ url: location.slice(`http://${HOST}`.length) })
    assert.equal(got.json().name, 'rack card 4')
  })

  void it('400 naming the field for every schema violation', async () => {
    assert.match(await badRequest({ uuid: U1 }, 'name'), /required/)
    assert.match(await badRequest({ name: 'x', uuid: 'not-a-uuid' }, 'uuid'), /uuid/)
    assert.match(
      await badRequest({ name: 'x', description: 'extra' }, 'description'),
      /unknown field/,
    )
    await badRequest({ name: 7 }, 'name')
    assert.match(
      await badRequest({ name: 'x', uuid: U1 }, 'uuid', `/v1/accelerators/${U2}`),
      /differs from the uuid in the path/,
    )
    await badRequest({ name: 'x' }, 'uuid', '/v1/accelerators/not-a-uuid')
    // The schema allows an empty or long string; the conductor refuses it, and the API words
    // it as every 400 (issue 27: it said `name: …`).
    assert.match(await badRequest({ name: '' }, 'name'), /must not be empty/)
    assert.match(await badRequest({ name: 'x'.repeat(300) }, 'name'), /at most 255 characters/)
    assert.equal(
      (await s.request({ url: '/v1/accelerators?device_type=REMOTE' })).json().accelerators.length,
      3,
    )
  })

  void it('409 naming the name or the uuid when it exists', async () => {
    const byName = await post({ name: 'IPSec Card' })
    assert.equal(byName.statusCode, 409, byName.body)
    assert.match(fault(byName), /name "IPSec Card" already exists/)
    const discovered = await post({ name: 'node1_FakeDevice' })
    assert.equal(discovered.statusCode, 409, discovered.body)
    const byUuid = await post({ name: 'fresh name', uuid: U1 })
    assert.equal(byUuid.statusCode, 409, byUuid.body)
    assert.match(fault(byUuid), new RegExp(`uuid "${U1}" already exists`))
  })

  void it('POST is listed in the Allow header of both paths', async () => {
    const collection = await s.request({ method: 'PATCH', url: '/v1/accelerators' })
    assert.equal(collection.statusCode, 405)
    assert.match(String(collection.headers.allow), /POST/)
    const item = await s.request({ method: 'PATCH', url: `/v1/accelerators/${U1}` })
    assert.equal(item.statusCode, 405)
    assert.match(String(item.headers.allow), /POST/)
  })
})
