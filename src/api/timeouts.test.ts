/**
 * The API's time limits (`[api] *_timeout`), over a real socket: a handler that never finishes is
 * answered 503 and logged; a client that sends its headers a byte at a time, or never sends the
 * body it declared, is answered 408 and disconnected; an idle keep-alive connection is closed.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import type { ConductorRpc } from '../rpc/conductor-rpc.js'
import { createTestApp, faultOf, type TestApp } from '../../test/support/api-app.js'
import { rawExchange, type RawExchange } from '../../test/support/fuzz/raw-http.js'

/** A conductor that never answers. */
const silentConductor = () =>
  new Proxy({} as ConductorRpc, { get: () => () => new Promise(() => {}) })

const LIMITS = {
  headersMs: 1000,
  requestMs: 1500,
  handlerMs: 3000,
  keepAliveMs: 1000,
  idleMs: 5000,
}

void describe('[api] time limits over a real socket', () => {
  let t: TestApp
  let port: number
  before(async () => {
    t = await createTestApp({ timeouts: LIMITS }, silentConductor())
    await t.app.listen({ host: '127.0.0.1', port: 0 })
    port = (t.app.server.address() as AddressInfo).port
  })
  after(() => t.close())

  void it('a request whose work outlives handler_timeout is answered 503, and logged', async () => {
    const body = JSON.stringify([{ name: 'dp', groups: [{ 'resources:FPGA': '1' }] }])
    const request = `POST /v2/device_profiles HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`
    const answer = await rawExchange(port, request, { deadlineMs: 5000 })
    assert.equal(answer.timedOut, false, JSON.stringify(t.logs))
    assert.equal(answer.responses[0]?.status, 503)
    assert.match(
      faultOf(answer.responses[0]!.body).faultstring,
      /not finished within 3 s \(\[api\] handler_timeout\)/,
    )
    const line = t.logs.find((l) => l.msg === 'request not finished within 3 s')
    assert.equal(line?.route, '/v2/device_profiles')
    assert.equal(line?.method, 'POST')
    // The connection stays usable for the next request.
    const next = await rawExchange(port, 'GET /healthcheck HTTP/1.1\r\nHost: a\r\n\r\n', {
      deadlineMs: 5000,
    })
    assert.equal(next.responses[0]?.status, 200)
  })

  /** Asserts the server answered 408 and closed the connection, no sooner than `limitMs`. */
  const cutOff = (answer: RawExchange, limitMs: number, limit: string) => {
    assert.equal(answer.timedOut, false, 'the server never closed the connection')
    assert.equal(answer.closed, true)
    assert.deepEqual(
      answer.responses.map((r) => r.status),
      [408],
    )
    assert.ok(answer.elapsedMs >= limitMs, `closed after ${answer.elapsedMs} ms, before ${limit}`)
  }

  void it('a slowloris client (headers a byte at a time) is cut off after headers_timeout', async () => {
    const head = 'GET /v2 HTTP/1.1\r\nHost: a\r\nX-Slow: ' + 'x'.repeat(100)
    const answer = await rawExchange(port, '', {
      deadlineMs: 8000,
      untilClosed: true,
      pieces: { chunks: [...head], gapMs: 100 },
    })
    cutOff(answer, LIMITS.headersMs, 'headers_timeout')
  })

  void it('a declared Content-Length that never arrives is cut off after request_timeout', async () => {
    const request =
      'POST /v2/device_profiles HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n[{"name"'
    cutOff(
      await rawExchange(port, request, { deadlineMs: 8000, untilClosed: true }),
      LIMITS.requestMs,
      'request_timeout',
    )
  })

  void it('a chunked body that never ends is cut off after request_timeout', async () => {
    const request =
      'PATCH /v2/accelerator_requests HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n'
    cutOff(
      await rawExchange(port, request, { deadlineMs: 8000, untilClosed: true }),
      LIMITS.requestMs,
      'request_timeout',
    )
  })

  void it('a connection that never sends a byte is closed', async () => {
    const answer = await rawExchange(port, '', { deadlineMs: 8000, untilClosed: true })
    assert.equal(answer.timedOut, false, 'the silent connection was never closed')
    assert.equal(answer.closed, true)
  })

  void it('an idle keep-alive connection is closed after keepalive_timeout', async () => {
    const answer = await rawExchange(port, 'GET /healthcheck HTTP/1.1\r\nHost: a\r\n\r\n', {
      responses: 2,
      deadlineMs: 8000,
    })
    assert.equal(answer.timedOut, false, 'the idle connection was never closed')
    assert.equal(answer.closed, true)
    assert.deepEqual(
      answer.responses.map((r) => r.status),
      [200],
    )
  })
})
