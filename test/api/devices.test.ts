import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { fault, HOST, startStack, type Stack } from './stack.js'

interface DeviceView {
  uuid: string
  type: string
  vendor: string
  hostname: string
  status?: string
  links: { href: string; rel: string }[]
  [k: string]: unknown
}

void describe('v2 devices', () => {
  let s: Stack
  let all: DeviceView[]
  before(async () => {
    s = await startStack()
    all = (await s.request({ url: '/v2/devices' })).json().devices
  })
  after(() => s.close())

  const list = async (query: string, version?: string) => {
    const res = await s.request({ url: `/v2/devices${query}`, version })
    assert.equal(res.statusCode, 200, res.body)
    return res.json().devices as DeviceView[]
  }

  void it('lists every device with the v2 fields and an absolute self link', () => {
    assert.equal(all.length, 5)
    const fake = all.find((d) => d.hostname === 'node1')!
    assert.deepEqual(Object.keys(fake).sort(), [
      'created_at',
      'hostname',
      'links',
      'model',
      'std_board_info',
      'type',
      'updated_at',
      'uuid',
      'vendor',
      'vendor_board_info',
    ])
    assert.equal(fake.type, 'FPGA')
    assert.equal(fake.vendor, '0xABCD')
    assert.equal(typeof fake.std_board_info, 'string')
    assert.deepEqual(JSON.parse(fake.std_board_info as string), {
      class: 'Fake class',
      device_id: '0xabcd',
    })
    assert.match(fake.created_at as string, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$/)
    assert.deepEqual(fake.links, [{ href: `http://${HOST}/v2/devices/${fake.uuid}`, rel: 'self' }])
  })

  void it('shows one device, bare; the same without the /v2 prefix', async () => {
    const one = all[0]!
    const res = await s.request({ url: `/v2/devices/${one.uuid}` })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(res.json(), one)
    assert.deepEqual((await s.request({ url: `/devices/${one.uuid}` })).json(), one)
    assert.deepEqual(await list(''), (await s.request({ url: '/devices' })).json().devices)
  })

  void it('answers 404 for an unknown or malformed uuid', async () => {
    const res = await s.request({ url: '/v2/devices/2d7f8a52-0c5a-4a57-9d56-5f0d2f3a0c11' })
    assert.equal(res.statusCode, 404)
    assert.match(fault(res), /device 2d7f8a52-0c5a-4a57-9d56-5f0d2f3a0c11 not found/)
    assert.equal((await s.request({ url: '/v2/devices/xyz' })).statusCode, 404)
  })

  void it('filters by type, vendor and hostname (combined with AND)', async () => {
    assert.equal((await list('?type=GPU')).length, 2)
    assert.ok((await list('?type=GPU')).every((d) => d.type === 'GPU'))
    assert.equal((await list('?vendor=0xABCD')).length, 1)
    assert.equal((await list('?hostname=node2')).length, 4)
    const combined = await list('?type=FPGA&vendor=8086&hostname=node2')
    assert.equal(combined.length, 1)
    assert.equal(combined[0]!.vendor, '8086')
    assert.deepEqual(await list('?type=NIC'), [])
  })

  void it('pages with limit and marker, sorted by sort_key/sort_dir', async () => {
    const first = await list('?limit=2')
    assert.deepEqual(first, all.slice(0, 2))
    const next = await list(`?limit=2&marker=${first[1]!.uuid}`)
    assert.deepEqual(next, all.slice(2, 4))
    const byUuidDesc = await list('?sort_key=uuid&sort_dir=desc')
    assert.deepEqual(
      byUuidDesc.map((d) => d.uuid),
      all
        .map((d) => d.uuid)
        .sort()
        .reverse(),
    )
    const bad = await s.request({ url: '/v2/devices?marker=2d7f8a52-0c5a-4a57-9d56-5f0d2f3a0c11' })
    assert.equal(bad.statusCode, 400)
    assert.match(fault(bad), /'marker'/)
    const badKey = await s.request({ url: '/v2/devices?sort_key=lifecycle' })
    assert.equal(badKey.statusCode, 400)
    assert.match(fault(badKey), /'sort_key'/)
  })

  void it('shows status only from microversion 2.3', async () => {
    for (const v of [undefined, '2.0', '2.2']) {
      assert.ok(
        (await list('', v)).every((d) => !('status' in d)),
        String(v),
      )
    }
    const at23 = await list('', '2.3')
    assert.ok(at23.every((d) => d.status === 'enabled'))
    const one = await s.request({ url: `/v2/devices/${all[0]!.uuid}`, version: 'latest' })
    assert.equal(one.json().status, 'enabled')
    assert.equal(one.headers['openstack-api-version'], 'accelerator 2.10')
  })

  void it('shows health, health_reason and health_updated_at, and filters by health, only from 2.5', async () => {
    assert.ok((await list('', '2.4')).every((d) => !('health' in d) && !('health_reason' in d)))
    const at25 = await list('', '2.5')
    assert.deepEqual(
      at25.map((d) => [d.health, d.health_reason, d.health_updated_at]),
      all.map(() => ['ok', null, null]),
    )
    assert.equal((await list('?health=ok', '2.5')).length, all.length)
    assert.deepEqual(await list('?health=unknown', '2.5'), [])
    // Before 2.5 the filter is ignored, as unknown filters are.
    assert.equal((await list('?health=unknown', '2.4')).length, all.length)
    const bad = await s.request({ url: '/v2/devices?health=sick', version: '2.5' })
    assert.equal(bad.statusCode, 400)
    assert.match(
      bad.body,
      /Invalid input for field 'health': must be one of: ok, degraded, failed, unknown/,
    )
  })

  void it('shows lifecycle and lifecycle_reason only from microversion 2.4', async () => {
    assert.ok(
      (await list('', '2.3')).every((d) => !('lifecycle' in d) && !('lifecycle_reason' in d)),
    )
    const at24 = await list('', '2.4')
    assert.deepEqual(
      at24.map((d) => [d.hostname, d.lifecycle, d.lifecycle_reason]),
      all.map((d) => [d.hostname, d.hostname === 'node1' ? 'inactive' : 'active', null]),
    )
  })

  void it('POST /devices/{uuid}/ready at 2.4: the agent installs it, or it ends in error with the reason', async () => {
    const ready = (uuid: string, version?: string) =>
      s.request({ method: 'POST', url: `/v2/devices/${uuid}/ready`, version })
    const fake = all.find((d) => d.hostname === 'node1')!
    const below = await ready(fake.uuid, '2.3')
    assert.equal(below.statusCode, 404)
    assert.match(fault(below), /needs microversion 2\.4/)
    const res = await ready(fake.uuid, '2.4')
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.json().uuid, fake.uuid)
    assert.equal(res.json().lifecycle, 'active')
    assert.equal(res.json().lifecycle_reason, null)
    const again = await ready(fake.uuid, '2.4')
    assert.equal(again.statusCode, 409)
    assert.match(fault(again), /is active; only an inactive or error device/)
    assert.equal((await ready('2d7f8a52-0c5a-4a57-9d56-5f0d2f3a0c11', '2.4')).statusCode, 404)
    assert.equal((await ready('not-a-uuid', '2.4')).statusCode, 404)
    assert.equal(
      (await s.request({ method: 'GET', url: `/v2/devices/${fake.uuid}/ready`, version: '2.4' }))
        .statusCode,
      405,
    )
  })

  void it('disables and enables a device: 200 with no body', async () => {
    const uuid = all[1]!.uuid
    const disable = await s.request({ method: 'POST', url: `/v2/devices/${uuid}/disable` })
    assert.equal(disable.statusCode, 200, disable.body)
    assert.equal(disable.body, '')
    assert.equal(
      (await s.request({ url: `/v2/devices/${uuid}`, version: '2.3' })).json().status,
      'maintaining',
    )
    // A JSON Content-Type with an empty body is fine too.
    const enable = await s.request({
      method: 'POST',
      url: `/devices/${uuid}/enable`,
      headers: { 'content-type': 'application/json' },
    })
    assert.equal(enable.statusCode, 200, enable.body)
    assert.equal(
      (await s.request({ url: `/v2/devices/${uuid}`, version: '2.3' })).json().status,
      'enabled',
    )
    const unknown = await s.request({
      method: 'POST',
      url: '/v2/devices/2d7f8a52-0c5a-4a57-9d56-5f0d2f3a0c11/disable',
    })
    assert.equal(unknown.statusCode, 404)
    assert.equal(
      (await s.request({ method: 'GET', url: `/v2/devices/${uuid}/disable` })).statusCode,
      405,
    )
  })
})
