import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createTestApp, type TestApp } from '../../test/support/api-app.js'

const v2Doc = (href: string, id = 'v2.0') => ({
  id,
  status: 'CURRENT',
  min_version: '2.0',
  max_version: '2.10',
  links: [{ href, rel: 'self' }],
})

void describe('version discovery', () => {
  let t: TestApp
  before(async () => {
    t = await createTestApp()
  })
  after(() => t.close())

  void it('GET / lists v2 (the default) and v1 with absolute self hrefs from the Host header', async () => {
    const res = await t.app.inject({ url: '/', headers: { host: 'cyborg.example:6666' } })
    assert.equal(res.statusCode, 200)
    assert.match(String(res.headers['content-type']), /^application\/json/)
    const doc = v2Doc('http://cyborg.example:6666/v2/', 'v2')
    assert.deepEqual(res.json(), {
      name: 'OpenStack Cyborg API',
      description: res.json().description,
      versions: [
        doc,
        {
          id: 'v1',
          status: 'SUPPORTED',
          min_version: '',
          max_version: '',
          links: [{ href: 'http://cyborg.example:6666/v1/', rel: 'self' }],
        },
      ],
      default_version: doc,
    })
    assert.equal(typeof res.json().description, 'string')
    assert.equal(res.headers['openstack-api-version'], undefined, 'the root is unversioned')
  })

  for (const url of ['/v2', '/v2/']) {
    void it(`GET ${url} is the v2 document with microversion headers`, async () => {
      const res = await t.app.inject({ url, headers: { host: '10.0.0.5:6666' } })
      assert.equal(res.statusCode, 200)
      assert.deepEqual(res.json(), v2Doc('http://10.0.0.5:6666/v2/'))
      assert.equal(res.headers['openstack-api-version'], 'accelerator 2.0')
      assert.equal(res.headers['openstack-api-minimum-version'], '2.0')
      assert.equal(res.headers['openstack-api-maximum-version'], '2.10')
    })
  }

  void it('ignores X-Forwarded-* by default, from any peer (issue 27)', async () => {
    for (const remoteAddress of ['127.0.0.1', '203.0.113.9']) {
      const res = await t.app.inject({
        url: '/v2',
        remoteAddress,
        headers: {
          host: 'internal:6666',
          'x-forwarded-proto': 'https',
          'x-forwarded-host': 'attacker.invalid',
          'x-forwarded-prefix': '/evil',
        },
      })
      assert.deepEqual(res.json().links, [{ href: 'http://internal:6666/v2/', rel: 'self' }])
    }
  })
})

void describe('version discovery behind a trusted proxy (enable_proxy_headers_parsing)', () => {
  let t: TestApp
  before(async () => {
    t = await createTestApp({ trustedProxies: ['127.0.0.1', '10.0.0.0/8', 'fd00::/8'] })
  })
  after(() => t.close())

  const forwarded = {
    host: 'internal:6666',
    'x-forwarded-proto': 'https',
    'x-forwarded-host': 'spoofed.invalid, cloud.example',
    'x-forwarded-prefix': '/accelerator/',
  }

  void it('honours X-Forwarded-Proto, -Host and -Prefix from a named proxy, the value it appended', async () => {
    for (const remoteAddress of ['127.0.0.1', '10.1.2.3', '::ffff:10.1.2.3', 'fd00::5']) {
      const res = await t.app.inject({ url: '/v2', remoteAddress, headers: forwarded })
      assert.deepEqual(
        res.json().links,
        [{ href: 'https://cloud.example/accelerator/v2/', rel: 'self' }],
        remoteAddress,
      )
    }
  })

  void it('ignores them from any other peer', async () => {
    for (const remoteAddress of ['203.0.113.9', '11.0.0.1', '::1', '::ffff:203.0.113.9']) {
      const res = await t.app.inject({ url: '/v2', remoteAddress, headers: forwarded })
      assert.deepEqual(
        res.json().links,
        [{ href: 'http://internal:6666/v2/', rel: 'self' }],
        remoteAddress,
      )
    }
  })
})

void describe('version discovery with [api] public_endpoint', () => {
  let t: TestApp
  before(async () => {
    t = await createTestApp({ publicEndpoint: 'https://api.example.org/accelerator/' })
  })
  after(() => t.close())

  void it('uses the public endpoint whatever the request says', async () => {
    for (const url of ['/', '/v2', '/v2/']) {
      const res = await t.app.inject({
        url,
        headers: { host: 'ignored:1', 'x-forwarded-host': 'ignored' },
      })
      const doc = url === '/' ? res.json().default_version : res.json()
      assert.deepEqual(doc.links, [
        { href: 'https://api.example.org/accelerator/v2/', rel: 'self' },
      ])
    }
  })
})
