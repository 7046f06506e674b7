/**
 * Issue 13: a request with `Content-Type: application/json` and no body is a request without a
 * body, over a real socket (Fastify's `inject` never showed the hang): on every route and every
 * method that may carry a body, it gets the same answer as without the header, at once.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { randomUUID } from 'node:crypto'
import { startStack, type Stack } from './stack.js'
import { rawExchange, routePaths } from '../support/fuzz/raw-http.js'

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'Application/JSON;charset=UTF-8',
]
const FRAMINGS = ['', 'Content-Length: 0\r\n', 'Transfer-Encoding: chunked\r\n']

void describe('an empty body with a JSON content type, over a real socket', () => {
  let s: Stack
  let port: number
  let paths: string[]
  before(async () => {
    // node2 has no agent: driver actions wait for it only this long.
    s = await startStack({
      conductor: { driverAdmin: { listTimeoutMs: 100, actionTimeoutMs: 200 } },
    })
    await s.app.listen({ host: '127.0.0.1', port: 0 })
    port = (s.app.server.address() as AddressInfo).port
    paths = routePaths(s.app.printRoutes({ commonPrefix: false })).map((p) =>
      p.replace(/:\w+/g, randomUUID()),
    )
  })
  after(() => s.close())

  const send = async (method: string, path: string, headers: string) => {
    const body = headers.includes('chunked') ? '0\r\n\r\n' : ''
    const request = `${method} ${path} HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n${headers}\r\n${body}`
    const answer = await rawExchange(port, request, { deadlineMs: 4_000 })
    assert.equal(
      answer.timedOut,
      false,
      `${method} ${path} with ${JSON.stringify(headers)} got no answer`,
    )
    assert.equal(answer.malformed, '')
    assert.equal(answer.responses.length, 1, `${method} ${path}: ${JSON.stringify(answer)}`)
    return answer.responses[0]!
  }

  void it("the issue's two curl commands answer at once", async () => {
    const ct = 'Content-Type: application/json\r\n'
    assert.equal((await send('DELETE', '/v2/device_profiles/nonexistent', ct)).status, 404)
    const created = await send('POST', '/v2/accelerator_requests', ct)
    assert.equal(created.status, 400)
    assert.match(created.body, /field 'body': required, and the request has none/)
  })

  void it('every route answers POST, PUT, PATCH and DELETE as it would without the header', async () => {
    assert.ok(paths.length >= 30, `routes found: ${paths.join(' ')}`)
    for (const path of paths) {
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
        const bare = await send(method, path, '')
        assert.ok(bare.status < 500, `${method} ${path} → ${bare.status} ${bare.body}`)
        for (const type of CONTENT_TYPES) {
          for (const framing of FRAMINGS) {
            const res = await send(method, path, `Content-Type: ${type}\r\n${framing}`)
            assert.equal(
              res.status,
              bare.status,
              `${method} ${path} with ${type} ${framing}: ${res.body} (without: ${bare.body})`,
            )
          }
        }
      }
    }
  })
})
