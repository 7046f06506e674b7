/** Requests refused before routing get the compat-v2 error body naming the problem. */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { describeClientError } from './client-errors.js'
import { createTestApp, faultOf, type TestApp } from '../../test/support/api-app.js'

void describe('client errors', () => {
  let t: TestApp
  before(async () => (t = await createTestApp()))
  after(() => t.close())

  void it("names the parser's problem, the size limit and the time limits", () => {
    const parser = Object.assign(new Error('Parse Error: Invalid method encountered'), {
      code: 'HPE_INVALID_METHOD',
      reason: 'Invalid method encountered',
    })
    assert.deepEqual(describeClientError(parser), {
      status: 400,
      message: 'Malformed HTTP request: Invalid method encountered (HPE_INVALID_METHOD)',
    })
    assert.equal(
      describeClientError(Object.assign(new Error('x'), { code: 'HPE_HEADER_OVERFLOW' })).status,
      431,
    )
    const timeout = describeClientError(
      Object.assign(new Error('x'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }),
    )
    assert.equal(timeout.status, 408)
    assert.match(timeout.message, /headers_timeout, request_timeout/)
  })

  void it('a broken percent-encoding in the path is a 400 naming the path', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v2/devices/%zz' })
    assert.equal(res.statusCode, 400)
    assert.equal(
      faultOf(res.body).faultstring,
      'The path "/v2/devices/%zz" is not a valid URL: it has a malformed percent-encoding',
    )
  })

  void it('a path parameter over 100 characters is a 414', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/v2/devices/${'a'.repeat(150)}` })
    assert.equal(res.statusCode, 414)
    assert.match(faultOf(res.body).faultstring, /longer than 100 characters/)
  })
})
