import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { negotiateMicroversion } from './microversion.js'
import { createTestApp, faultOf, type TestApp } from '../../test/support/api-app.js'

void describe('negotiateMicroversion', () => {
  const ok: [string | string[] | undefined, number][] = [
    [undefined, 0],
    ['accelerator 2.0', 0],
    ['accelerator 2.3', 3],
    ['accelerator 2.4', 4],
    ['accelerator 2.5', 5],
    ['accelerator 2.6', 6],
    ['accelerator 2.7', 7],
    ['accelerator 2.8', 8],
    ['accelerator 2.9', 9],
    ['accelerator 2.10', 10],
    ['Accelerator   2.2', 2],
    ['accelerator latest', 10],
    ['accelerator LATEST', 10],
    ['compute 2.90', 0],
    ['compute 2.90, accelerator 2.2', 2],
    [['compute 2.1', 'accelerator 2.1'], 1],
    ['2.1, accelerator 2.2', 2],
    ['accelerator 2.2, 2.1', 2],
  ]
  for (const [header, minor] of ok) {
    void it(`${JSON.stringify(header)} → 2.${minor}`, () =>
      assert.deepEqual(negotiateMicroversion(header), { minor }))
  }
  // The bare form (no service type) is accepted, and marked so that the hook logs its deprecation.
  const bare: [string, number][] = [
    ['2.1', 1],
    ['latest', 10],
    ['compute 2.90, 2.3', 3],
  ]
  for (const [header, minor] of bare) {
    void it(`${JSON.stringify(header)} → 2.${minor}, bare`, () =>
      assert.deepEqual(negotiateMicroversion(header), { minor, bare: true }))
  }
  const bad = [
    'accelerator 2.11',
    '2.11',
    'accelerator 3.0',
    'accelerator 1.9',
    'accelerator two',
    '2',
    'accelerator 2.x',
    'accelerator',
  ]
  for (const header of bad) {
    void it(`${JSON.stringify(header)} → error naming the range`, () => {
      const r = negotiateMicroversion(header)
      assert.equal(r.minor, undefined)
      assert.match(r.error ?? '', /2\.0 to 2\.10/)
    })
  }
})

void describe('microversion headers on responses', () => {
  let t: TestApp
  before(async () => {
    t = await createTestApp()
  })
  after(() => t.close())

  const expectHeaders = (headers: Record<string, unknown>, effective: string) => {
    assert.equal(headers['openstack-api-minimum-version'], '2.0')
    assert.equal(headers['openstack-api-maximum-version'], '2.10')
    assert.equal(headers['openstack-api-version'], `accelerator ${effective}`)
    assert.equal(headers.vary, 'OpenStack-API-Version')
  }

  void it('no header is 2.0; latest is 2.10; the bare form works', async () => {
    expectHeaders((await t.app.inject({ url: '/v2/devices' })).headers, '2.0')
    const latest = await t.app.inject({
      url: '/devices',
      headers: { 'openstack-api-version': 'accelerator latest' },
    })
    assert.equal(latest.statusCode, 200)
    expectHeaders(latest.headers, '2.10')
    expectHeaders(
      (await t.app.inject({ url: '/v2/devices', headers: { 'openstack-api-version': '2.2' } }))
        .headers,
      '2.2',
    )
  })

  void it('logs a deprecation warning for the bare form only, as OpenStack Cyborg 17.0.0', async () => {
    const warnings = () =>
      t.logs.filter((l) => l.level === 40 && /without the service type/.test(String(l.msg)))
    const before = warnings().length
    await t.app.inject({
      url: '/v2/devices',
      headers: { 'openstack-api-version': 'accelerator 2.2' },
    })
    await t.app.inject({ url: '/v2/devices' })
    assert.equal(warnings().length, before)
    const bare = await t.app.inject({
      url: '/v2/devices',
      headers: { 'openstack-api-version': '2.2' },
    })
    assert.equal(bare.statusCode, 200)
    expectHeaders(bare.headers, '2.2')
    assert.equal(warnings().length, before + 1)
    assert.match(String(warnings().at(-1)!.msg), /"OpenStack-API-Version: accelerator <version>"/)
  })

  void it('reads no legacy header: X-OpenStack-Cyborg-API-Version is ignored, as upstream', async () => {
    const res = await t.app.inject({
      url: '/v2/devices',
      headers: { 'x-openstack-cyborg-api-version': '2.3' },
    })
    assert.equal(res.statusCode, 200)
    expectHeaders(res.headers, '2.0')
  })

  void it('a version out of range or unparsable is 406 naming the range, with the headers', async () => {
    for (const v of ['accelerator 2.11', 'accelerator 3.0', 'accelerator abc', '2.11']) {
      const res = await t.app.inject({
        url: '/v2/device_profiles',
        headers: { 'openstack-api-version': v },
      })
      assert.equal(res.statusCode, 406, v)
      assert.match(faultOf(res.body).faultstring, /2\.0 to 2\.10/)
      assert.equal(faultOf(res.body).faultcode, 'Client')
      expectHeaders(res.headers, '2.0')
    }
  })

  void it('errors (404, 405) carry the headers of the negotiated version', async () => {
    const h = { 'openstack-api-version': 'accelerator 2.1' }
    const missing = await t.app.inject({
      url: '/v2/devices/5c8f3ac5-8e38-4f38-9ad7-a0a17b2b4e5a',
      headers: h,
    })
    assert.equal(missing.statusCode, 404)
    expectHeaders(missing.headers, '2.1')
    const unknown = await t.app.inject({ url: '/v2/nothing-here', headers: h })
    assert.equal(unknown.statusCode, 404)
    expectHeaders(unknown.headers, '2.1')
    const method = await t.app.inject({ method: 'PUT', url: '/v2/devices', headers: h })
    assert.equal(method.statusCode, 405)
    expectHeaders(method.headers, '2.1')
  })
})
