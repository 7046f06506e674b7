/**
 * Query strings are checked by each route's schema before its handler (issue 17,
 * src/api/routing.ts), in OpenStack Cyborg's words (src/api/validation-errors.ts): each bad
 * parameter is a 400 naming it, a parameter given twice is refused, unknown ones are ignored, and a
 * route below its microversion is a 404 whatever its query string.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createTestApp, faultOf, type TestApp } from '../support/api-app.js'

const V26 = { 'openstack-api-version': 'accelerator 2.7' }

let t: TestApp
before(async () => {
  t = await createTestApp()
})
after(async () => t.close())

async function fault(url: string, headers: Record<string, string> = V26) {
  const res = await t.app.inject({ method: 'GET', url, headers })
  return {
    status: res.statusCode,
    text: res.statusCode >= 400 ? faultOf(res.body).faultstring : '',
  }
}

const BAD: [string, string][] = [
  ['/v2/devices?limit=0', `Invalid input for field 'limit': must be a positive integer, got "0"`],
  ['/v2/devices?limit=1&limit=2', "Invalid input for field 'limit': must be given at most once"],
  [
    '/v2/devices?hostname=a&hostname=b',
    "Invalid input for field 'hostname': must be given at most once",
  ],
  ['/v2/devices?sort_dir=up', "Invalid input for field 'sort_dir': must be asc or desc"],
  [
    '/v2/devices?health=sick',
    "Invalid input for field 'health': must be one of: ok, degraded, failed, unknown",
  ],
  ['/v2/deployables?sort_key=nope', "Invalid input for field 'sort_key': must be one of: "],
  [
    '/v2/attributes?deployable_id=-1',
    `Invalid input for field 'deployable_id': must be a non-negative integer, got "-1"`,
  ],
  [
    '/v2/accelerator_requests?instance=vm1',
    `Invalid input for field 'instance': must be a UUID, got "vm1"`,
  ],
  [
    '/v2/accelerator_requests?bind_state=bound',
    `Invalid input for field 'bind_state': must be "resolved", got "bound"`,
  ],
  [
    '/v2/capacity?resource_class=fpga',
    `Invalid input for field 'resource_class': must be 1 to 255 of A-Z, 0-9 and _, got "fpga"`,
  ],
  [
    '/v2/capacity?trait=CUSTOM_A,bad',
    `Invalid input for field 'trait': each must be 1 to 255 of A-Z, 0-9 and _, got "CUSTOM_A,bad"`,
  ],
  [
    '/v2/capacity?group_by=rack',
    "Invalid input for field 'group_by': must be one of: host, resource_class, device_type",
  ],
  ['/v2/capacity?hostname=', "Invalid input for field 'hostname': must be 1 to 255 characters"],
  ['/v2/quota?project_id=', "Invalid input for field 'project_id': must not be empty"],
  [
    '/v1/accelerators?limit=x',
    `Invalid input for field 'limit': must be a positive integer, got "x"`,
  ],
  [
    '/v1/backend_services?backend=gpu0',
    `Invalid input for field 'backend': must be a device UUID, got "gpu0"`,
  ],
]

void describe('query strings, checked by schema', () => {
  for (const [url, message] of BAD) {
    void it(`${url} → 400 ${message}`, async () => {
      const { status, text } = await fault(url)
      assert.equal(status, 400, text)
      assert.ok(text.startsWith(message), `${text} should start with ${message}`)
    })
  }

  void it('a required parameter that is missing or empty names it in its own words', async () => {
    for (const url of [
      '/v2/device_profiles',
      '/v2/device_profiles?value=',
      '/v2/device_profiles?value=,,',
    ]) {
      const res = await t.app.inject({ method: 'DELETE', url, headers: V26 })
      assert.equal(res.statusCode, 400, url)
      assert.equal(
        faultOf(res.body).faultstring,
        "Invalid input for field 'value': name at least one device profile by uuid or name",
      )
    }
  })

  void it('a list of uuids is checked whole; the webhook page has its own limit', async () => {
    const del = await t.app.inject({
      method: 'DELETE',
      url: '/v2/accelerator_requests?arqs=a,b',
      headers: V26,
    })
    assert.equal(del.statusCode, 400)
    assert.match(
      faultOf(del.body).faultstring,
      /'arqs': must be a comma-separated list of accelerator request UUIDs, got "a,b"/,
    )
    const uuid = '3fa85f64-5717-4562-b3fc-2c963f66afa6'
    const page = await fault(`/v2/webhooks/${uuid}/deliveries?limit=1001`)
    assert.equal(page.status, 400)
    assert.equal(
      page.text,
      `Invalid input for field 'limit': must be an integer 1-1000, got "1001"`,
    )
  })

  void it('good values, repeated traits and unknown parameters pass', async () => {
    for (const url of [
      '/v2/devices?limit=5&sort_key=hostname&sort_dir=desc&filters.field=x',
      '/v2/capacity?trait=CUSTOM_A&trait=CUSTOM_B,,CUSTOM_C&group_by=host',
      `/v2/accelerator_requests?instance=3FA85F64-5717-4562-B3FC-2C963F66AFA6&bind_state=resolved`,
      '/v2/attributes?deployable_id=0&key=rc',
    ]) {
      const { status, text } = await fault(url)
      assert.equal(status, 200, `${url}: ${text}`)
    }
  })

  void it('below its microversion a route is a 404 before its query string is looked at', async () => {
    const old = { 'openstack-api-version': 'accelerator 2.5' }
    const capacity = await fault('/v2/capacity?group_by=rack', old)
    assert.equal(capacity.status, 404)
    assert.match(capacity.text, /needs microversion 2\.6/)
    const quota = await fault('/v2/quota?project_id=', {
      'openstack-api-version': 'accelerator 2.6',
    })
    assert.equal(quota.status, 404)
    assert.match(quota.text, /GET \/v2\/quota needs microversion 2\.7/)
  })
})
