/**
 * Deeply nested JSON bodies (issue 27): every JSON body nested deeper than 32 levels is a 400 that
 * says so, before any code walks it, on every route; at the limit the body reaches its route.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { MAX_JSON_DEPTH } from '../../src/api/body-parser.js'
import { fault, startStack, type Stack } from './stack.js'

const json = { 'content-type': 'application/json' }
const MISSING = '0b0e0000-0000-4000-8000-00000000dead'

/** `{"a":{"a":…{}…}}` with `levels` objects, `open` and `close` around the innermost. */
const nested = (levels: number, open = '{"a":', close = '}', inner = '{}') =>
  open.repeat(levels - 1) + inner + close.repeat(levels - 1)

void describe('deeply nested JSON bodies', () => {
  let s: Stack
  let accelerator: string
  before(async () => {
    s = await startStack({ autoActivate: true })
    const res = await s.request({ url: '/v1/accelerators' })
    accelerator = (res.json().accelerators as { uuid: string }[])[0]!.uuid
  })
  after(() => s.close())

  const send = (method: 'PUT' | 'POST' | 'PATCH', url: string, payload: string) =>
    s.request({ method, url, headers: json, payload, version: '2.8' })

  void it('PUT /v1/accelerators/{uuid}/acc_specs 10,000 levels deep: 400 naming the limit, known or unknown uuid', async () => {
    const body = `{"acc_specs":{"acc_capability":${nested(10_000)}}}`
    assert.ok(body.length < 64 * 1024)
    for (const uuid of [accelerator, MISSING]) {
      const res = await send('PUT', `/v1/accelerators/${uuid}/acc_specs`, body)
      assert.equal(res.statusCode, 400, res.body)
      assert.match(fault(res), /nested deeper than 32 levels/)
    }
  })

  void it('every route refuses it the same way, arrays and objects alike', async () => {
    const routes: ['PUT' | 'POST' | 'PATCH', string][] = [
      ['POST', '/v2/accelerator_requests'],
      ['PATCH', '/v2/accelerator_requests'],
      ['POST', '/v2/device_profiles'],
      ['POST', '/v2/webhooks'],
      ['POST', '/v1/accelerators'],
      ['PUT', `/v1/accelerators/${accelerator}`],
      ['POST', '/v2/device_profiles/nope/explain'],
    ]
    for (const [method, url] of routes) {
      for (const body of [nested(MAX_JSON_DEPTH + 1), nested(5000, '[', ']', '[]')]) {
        const res = await send(method, url, body)
        assert.equal(res.statusCode, 400, `${method} ${url}: ${res.body}`)
        assert.match(fault(res), /nested deeper than 32 levels/, `${method} ${url}`)
      }
    }
  })

  void it('32 levels, and brackets inside strings, reach the route', async () => {
    const deep = `{"acc_specs":{"acc_capability":${nested(MAX_JSON_DEPTH - 2)}}}`
    const res = await send('PUT', `/v1/accelerators/${MISSING}/acc_specs`, deep)
    assert.equal(res.statusCode, 404, res.body)
    const text = `{"acc_specs":{"acc_capability":{"x":"${'{['.repeat(100)}\\"{"}}}`
    const quoted = await send('PUT', `/v1/accelerators/${MISSING}/acc_specs`, text)
    assert.equal(quoted.statusCode, 404, quoted.body)
  })
})
