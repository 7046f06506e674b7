import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createTestApp, type TestApp } from '../../test/support/api-app.js'

const v2Doc = (href: string, id = 'v2.0') => ({
  id,
  status: 'CURRENT',
  min_version: '2.0',
  max_version: '2.8',
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
      assert.equal(res.headers['openstack-api-maximum-version'], '2.8')
    })
  }

  void it('honours X-Forwarded-Proto, -Host and -Prefix', async () => {
    const res = await t.app.inject({
      url: '/v2',
      headers: {
        host: 'internal:6666',
        'x-forwarded-proto': 'https',
        'x-forwarded-host': 'cloud.example, proxy2',
        'x-forwarded-prefix': '/accelerator/',
      },
    })
    assert.deepEqual(res.json().links, [
      { href: 'https://cloud.example/accelerator/v2/', rel: 'self' },
    ])
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
