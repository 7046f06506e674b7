/**
 * The dashboard's routes without a browser (the browser test is test/web/dashboard.test.ts): the
 * shell at its URLs, a page or asset that does not exist named in a compat-v2 404, the script
 * gzipped for a browser that accepts it, unbuilt assets a 503 saying what to run, and no token
 * asked for any of it.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { gunzipSync } from 'node:zlib'
import Fastify from 'fastify'
import { createTestApp, faultOf, type TestApp } from '../../../test/support/api-app.js'
import { isPublicPath } from '../auth.js'
import { installErrorHandling } from '../errors.js'
import { dashboardRoutes } from './dashboard.js'

void describe('dashboard routes', () => {
  let t: TestApp
  before(async () => {
    t = await createTestApp()
  })
  after(async () => t.close())

  void it('answers the shell at /dashboard and each page’s URL, and 404 names the pages', async () => {
    for (const url of ['/dashboard', '/dashboard/', '/dashboard/fleet', '/dashboard/devices/abc']) {
      const res = await t.app.inject({ url })
      assert.equal(res.statusCode, 200, url)
      assert.match(res.headers['content-type'] as string, /^text\/html/)
      assert.match(res.body, /\/dashboard\/assets\/app\.js/)
    }
    const res = await t.app.inject({ url: '/dashboard/hosts' })
    assert.equal(res.statusCode, 404)
    assert.match(
      faultOf(res.body).faultstring,
      /no dashboard page 'hosts': pages are fleet, devices/,
    )
  })

  void it('serves app.js gzipped to a browser that accepts it, and names unknown assets', async () => {
    const zipped = await t.app.inject({
      url: '/dashboard/assets/app.js',
      headers: { 'accept-encoding': 'gzip, deflate, br' },
    })
    assert.equal(zipped.statusCode, 200)
    assert.equal(zipped.headers['content-encoding'], 'gzip')
    const plain = await t.app.inject({ url: '/dashboard/assets/app.js' })
    assert.equal(plain.headers['content-encoding'], undefined)
    assert.equal(gunzipSync(zipped.rawPayload).toString(), plain.body)
    const css = await t.app.inject({ url: '/dashboard/assets/app.css' })
    assert.match(css.headers['content-type'] as string, /^text\/css/)
    const none = await t.app.inject({ url: '/dashboard/assets/secret.json' })
    assert.equal(none.statusCode, 404)
    assert.match(
      faultOf(none.body).faultstring,
      /no dashboard asset 'secret.json': assets are app\.js, app\.css/,
    )
  })

  void it('answers 503 naming `npm run build` when the assets are not built', async () => {
    const app = Fastify()
    installErrorHandling(app)
    dashboardRoutes(app, '/nonexistent/dist/web')
    const res = await app.inject({ url: '/dashboard/assets/app.js' })
    assert.equal(res.statusCode, 503)
    assert.match(faultOf(res.body).faultstring, /not built: run `npm run build`/)
    await app.close()
  })

  void it('needs no token: the page sends the caller’s own', () => {
    for (const url of ['/dashboard', '/dashboard/fleet?x=1', '/dashboard/assets/app.js'])
      assert.ok(isPublicPath(url), url)
    assert.ok(!isPublicPath('/dashboardx'))
  })
})
