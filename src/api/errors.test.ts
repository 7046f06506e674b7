import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  AppError,
  ConflictError,
  DriverError,
  InvalidInputError,
  InvalidStateError,
  NotFoundError,
  TimeoutError,
  UnavailableError,
} from '../domain/errors.js'
import { ApiError, errorBody, errorShapeFor, formatValidationError, statusOf } from './errors.js'
import { createTestApp, faultOf, type TestApp } from '../../test/support/api-app.js'

const UUID = '0b0e5fd4-6f4a-4d2b-9d1c-9a5a3f7d2e11'

void describe('the error → HTTP map', () => {
  const cases: [unknown, number][] = [
    [new NotFoundError('x'), 404],
    [new ConflictError('x'), 409],
    [new InvalidInputError('x'), 400],
    [new InvalidStateError('x'), 409],
    [new TimeoutError('x'), 503],
    [new UnavailableError('x'), 503],
    [new DriverError('x'), 500],
    [new AppError('x'), 500],
    [new Error('x'), 500],
    ['a string', 500],
    [new ApiError(406, 'x'), 406],
    [Object.assign(new Error('x'), { code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413 }), 413],
    [Object.assign(new Error('x'), { code: 'SOMETHING', statusCode: 400 }), 500],
  ]
  for (const [err, status] of cases) {
    void it(`${err instanceof Error ? err.constructor.name : typeof err} → ${status}`, () =>
      assert.equal(statusOf(err), status))
  }

  void it("the body is 17.0.0's: an object in error_message; the ≤ 16.x JSON text on request", () => {
    const gone = { faultcode: 'Client', faultstring: 'gone', debuginfo: null }
    assert.deepEqual(JSON.parse(errorBody(404, 'gone')), { error_message: gone })
    assert.deepEqual(JSON.parse(JSON.parse(errorBody(404, 'gone', 'string')).error_message), gone)
    assert.equal(JSON.parse(errorBody(503, 'later')).error_message.faultcode, 'Server')
  })

  void it("only python-cyborgclient's own User-Agent gets the JSON text", () => {
    const shape = (agent?: string) =>
      errorShapeFor(agent === undefined ? {} : { 'user-agent': agent })
    assert.equal(shape('python-cyborgclient'), 'string')
    assert.equal(shape('python-cyborgclient keystoneauth1/5.0.0 python-requests/2.28.1'), 'string')
    assert.equal(shape('openstacksdk/0.101.0 keystoneauth1/5.0.0 python-requests/2.28.1'), 'object')
    assert.equal(shape('python-cyborgclientx'), 'object')
    assert.equal(shape('curl/8.0'), 'object')
    assert.equal(shape(), 'object')
  })

  void it('formats ajv errors naming the field', () => {
    const f = (e: object) =>
      formatValidationError([{ instancePath: '', params: {}, ...e } as never], 'body')
    assert.equal(
      f({ keyword: 'required', params: { missingProperty: 'key' } }),
      "Invalid input for field 'key': required",
    )
    assert.equal(
      f({ instancePath: '/groups/0', keyword: 'type', params: { type: 'object' } }),
      "Invalid input for field 'groups/0': must be object",
    )
    assert.equal(
      f({ keyword: 'additionalProperties', params: { additionalProperty: 'x' } }),
      "Invalid input for field 'x': unknown field",
    )
    assert.equal(
      f({ keyword: 'type', params: { type: 'object' } }),
      "Invalid input for field 'body': must be object",
    )
  })
})

void describe('error responses', () => {
  let t: TestApp
  before(async () => {
    t = await createTestApp({ bodyLimit: 4096 })
  })
  after(() => t.close())

  const expectError = (
    res: { statusCode: number; headers: Record<string, unknown>; body: string },
    status: number,
    re: RegExp,
  ) => {
    assert.equal(res.statusCode, status, res.body)
    assert.match(String(res.headers['content-type']), /^application\/json/)
    const fault = faultOf(res.body)
    assert.equal(fault.faultcode, status < 500 ? 'Client' : 'Server')
    assert.equal(fault.debuginfo, null)
    assert.match(fault.faultstring, re)
  }
  const post = (url: string, payload: string, contentType: string | null = 'application/json') =>
    t.app.inject({
      method: 'POST',
      url,
      payload,
      headers: contentType ? { 'content-type': contentType } : {},
    })

  void it('unknown path → 404 in the same format, with or without /v2', async () => {
    expectError(await t.app.inject({ url: '/v2/nope' }), 404, /not be found.*\/v2\/nope/)
    expectError(await t.app.inject({ url: '/nope/deeper?x=1' }), 404, /not be found/)
  })

  void it('unsupported method on a known path → 405 with Allow', async () => {
    const res = await t.app.inject({ method: 'PATCH', url: '/v2/device_profiles' })
    expectError(res, 405, /PATCH/)
    assert.equal(res.headers.allow, 'GET, HEAD, POST, DELETE')
    expectError(
      await t.app.inject({ method: 'DELETE', url: `/v2/devices/${UUID}` }),
      405,
      /allowed: GET, HEAD/,
    )
  })

  void it('malformed JSON → 400', async () => {
    expectError(await post('/v2/device_profiles', '[{"name": '), 400, /Malformed JSON/)
  })

  void it('a prototype-poisoning key → 400', async () => {
    expectError(await post('/v2/attributes', '{"__proto__": {"x": 1}}'), 400, /__proto__/)
  })

  void it('a body without Content-Type or with another one → 415 saying what to send', async () => {
    expectError(
      await post('/v2/device_profiles', 'name=x', null),
      415,
      /Content-Type: application\/json/,
    )
    expectError(
      await post('/v2/device_profiles', 'name=x', 'application/x-www-form-urlencoded'),
      415,
      /application\/json/,
    )
  })

  void it('a body over the limit → 413', async () => {
    expectError(
      await post('/v2/device_profiles', JSON.stringify([{ name: 'x'.repeat(5000) }])),
      413,
      /4096 bytes/,
    )
  })

  void it('schema violations → 400 naming the field', async () => {
    expectError(
      await post('/v2/attributes', '{"deployable_id": 1, "key": "k"}'),
      400,
      /field 'value': required/,
    )
    expectError(
      await post('/v2/attributes', '{"deployable_id": 1, "key": "k", "value": "v", "x": 1}'),
      400,
      /field 'x'/,
    )
    expectError(
      await post('/v2/attributes', '{"deployable_id": "1a", "key": "k", "value": "v"}'),
      400,
      /field 'deployable_id'/,
    )
    expectError(
      await post('/v2/attributes', '{"deployable_id": [1], "key": "k", "value": "v"}'),
      400,
      /field 'deployable_id'/,
    )
    expectError(await post('/v2/attributes', '[]'), 400, /field 'body'/)
    expectError(await post('/v2/attributes', ''), 400, /field 'body'/)
  })

  void it('bad known query parameters → 400 naming them; unknown ones are ignored', async () => {
    expectError(await t.app.inject({ url: '/v2/devices?limit=0' }), 400, /'limit'/)
    expectError(await t.app.inject({ url: '/v2/devices?limit=abc' }), 400, /'limit'/)
    expectError(await t.app.inject({ url: '/v2/devices?sort_dir=up' }), 400, /'sort_dir'/)
    expectError(
      await t.app.inject({ url: '/v2/deployables?sort_key=bogus' }),
      400,
      /'sort_key': must be one of/,
    )
    expectError(await t.app.inject({ url: `/v2/devices?marker=${UUID}` }), 400, /'marker'/)
    expectError(await t.app.inject({ url: '/v2/devices?type=a&type=b' }), 400, /'type'/)
    expectError(
      await t.app.inject({ url: '/v2/attributes?deployable_id=x' }),
      400,
      /'deployable_id'/,
    )
    const ok = await t.app.inject({
      url: '/v2/devices?filters.field=name&filters.value=x&whatever=1',
    })
    assert.equal(ok.statusCode, 200)
    assert.deepEqual(ok.json(), { devices: [] })
  })

  void it('a malformed uuid in a path is 404, as an unknown one', async () => {
    expectError(
      await t.app.inject({ url: '/v2/devices/not-a-uuid' }),
      404,
      /device not-a-uuid not found/,
    )
    expectError(
      await t.app.inject({ url: `/v2/devices/${UUID}` }),
      404,
      new RegExp(`device ${UUID} not found`),
    )
    expectError(await t.app.inject({ url: '/v2/deployables/x' }), 404, /deployable x not found/)
    expectError(await t.app.inject({ url: '/v2/attributes/x' }), 404, /attribute x not found/)
  })

  void it('an unexpected error → 500 without internals, logged with its stack', async () => {
    const res = await t.app.inject({ method: 'POST', url: `/v2/devices/${UUID}/disable` })
    expectError(res, 500, /Internal error.*req-/)
    assert.doesNotMatch(res.body, /conductor stub/)
    const line = t.logs.find(
      (l) => l.request_id === res.headers['x-openstack-request-id'] && l.level === 50,
    )
    assert.ok(line, 'an error line for the request')
    assert.match(String((line.err as { stack?: string }).stack), /conductor stub/)
  })

  void it('4xx are logged without a stack', async () => {
    const res = await t.app.inject({ url: '/v2/devices?limit=-1' })
    const lines = t.logs.filter((l) => l.request_id === res.headers['x-openstack-request-id'])
    assert.ok(lines.length > 0)
    for (const l of lines) assert.equal(l.err, undefined)
  })
})

void describe('request ids', () => {
  let t: TestApp
  before(async () => {
    t = await createTestApp()
  })
  after(() => t.close())

  void it('generates req-<uuid> and returns it on every response', async () => {
    for (const url of ['/', '/v2', '/v2/devices', '/nope', '/healthcheck']) {
      const res = await t.app.inject({ url })
      assert.match(String(res.headers['x-openstack-request-id']), /^req-[0-9a-f-]{36}$/, url)
    }
  })

  void it('honours a valid incoming X-OpenStack-Request-ID and replaces an invalid one', async () => {
    const id = 'req-0b0e5fd4-6f4a-4d2b-9d1c-9a5a3f7d2e11'
    const res = await t.app.inject({ url: '/v2', headers: { 'x-openstack-request-id': id } })
    assert.equal(res.headers['x-openstack-request-id'], id)
    const bad = await t.app.inject({
      url: '/v2',
      headers: { 'x-openstack-request-id': 'evil\u0000' },
    })
    assert.notEqual(bad.headers['x-openstack-request-id'], 'evil\u0000')
    assert.match(String(bad.headers['x-openstack-request-id']), /^req-/)
  })

  void it('GET /healthcheck answers ok after a database read', async () => {
    const res = await t.app.inject({ url: '/healthcheck' })
    assert.equal(res.statusCode, 200)
    assert.equal(res.body, 'OK') // oslo.middleware's plain answer (docs/healthcheck.md)
  })
})

void describe('healthcheck with the database down', () => {
  void it('is 503', async () => {
    const t = await createTestApp()
    try {
      await t.db.close()
      const res = await t.app.inject({ url: '/healthcheck' })
      assert.equal(res.statusCode, 503)
      assert.match(res.body, /^database unavailable$/m)
    } finally {
      await t.app.close()
    }
  })
})
