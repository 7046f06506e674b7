/**
 * Fuzzing the accelerator request endpoints with arbitrary JSON, query strings and paths: every
 * answer is a 2xx or a 4xx with an error message, never a 500 (fast-check). A fixed seed in CI;
 * any by hand: FUZZ_SEED=<n> FUZZ_RUNS=<n>. Every other route: routes-fuzz.test.ts.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { fuzzParameters } from '../support/fuzz/api-fuzz.js'
import { startStack, type Stack } from './stack.js'

const json = { 'content-type': 'application/json' }
const uuidish = fc.oneof(
  fc.uuid(),
  fc.constantFrom('nope', '', '00000000-0000-4000-8000-000000000001'),
  fc.string(),
)
const opArb = fc.record(
  {
    op: fc.oneof(fc.constantFrom('add', 'remove', 'replace'), fc.string()),
    path: fc.oneof(
      fc.constantFrom('/hostname', '/instance_uuid', '/device_rp_uuid', '/project_id', '/state'),
      fc.string(),
    ),
    value: fc.oneof(fc.constantFrom('node1'), fc.uuid(), fc.jsonValue()),
  },
  { requiredKeys: [] },
)
const patchBody = fc.oneof(
  fc.dictionary(uuidish, fc.oneof(fc.array(opArb, { maxLength: 5 }), fc.jsonValue()), {
    maxKeys: 3,
  }),
  fc.jsonValue(),
)

void describe('v2 accelerator requests: fuzzed input never gets a 500', () => {
  let s: Stack
  let known: string
  before(async () => {
    s = await startStack({ autoActivate: true, maxArqsPerRequest: 8 })
    const dp = [{ name: 'dp-fuzz', groups: [{ 'resources:FPGA': '1' }] }]
    assert.equal(
      (
        await s.request({
          method: 'POST',
          url: '/v2/device_profiles',
          headers: json,
          payload: JSON.stringify(dp),
        })
      ).statusCode,
      201,
    )
    const res = await s.request({
      method: 'POST',
      url: '/v2/accelerator_requests',
      headers: json,
      payload: JSON.stringify({ device_profile_name: 'dp-fuzz' }),
    })
    known = (res.json().arqs as { uuid: string }[])[0]!.uuid
  })
  after(() => s.close())

  const check = (res: { statusCode: number; body: string }, what: string) => {
    assert.ok(res.statusCode < 500, `${what} → ${res.statusCode} ${res.body}`)
    if (res.statusCode >= 400 && res.statusCode !== 423)
      assert.match(res.body, /error_message/, `${what}: ${res.body}`)
  }

  void it('POST and PATCH bodies', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.jsonValue(),
        patchBody,
        fc.boolean(),
        async (postBody, patch, withPath) => {
          const p = await s.request({
            method: 'POST',
            url: '/v2/accelerator_requests',
            headers: json,
            payload: JSON.stringify(postBody),
          })
          check(p, `POST ${JSON.stringify(postBody)}`)
          const url = withPath ? `/v2/accelerator_requests/${known}` : '/v2/accelerator_requests'
          const r = await s.request({
            method: 'PATCH',
            url,
            headers: json,
            payload: JSON.stringify(patch),
          })
          check(r, `PATCH ${url} ${JSON.stringify(patch)}`)
        },
      ),
      fuzzParameters(150),
    )
  })

  void it('queries and paths of GET and DELETE', async () => {
    const q = fc.dictionary(
      fc.constantFrom('instance', 'bind_state', 'arqs', 'limit', 'marker', 'sort_key', 'x'),
      fc.oneof(uuidish, fc.constantFrom('resolved', '1', '-1', '')),
    )
    await fc.assert(
      fc.asyncProperty(q, uuidish, async (query, id) => {
        const qs = new URLSearchParams(query).toString()
        check(
          await s.request({ method: 'GET', url: `/v2/accelerator_requests?${qs}` }),
          `GET ?${qs}`,
        )
        check(
          await s.request({
            method: 'GET',
            url: `/v2/accelerator_requests/${encodeURIComponent(id)}`,
          }),
          `GET /${id}`,
        )
        check(
          await s.request({ method: 'DELETE', url: `/v2/accelerator_requests?${qs}` }),
          `DELETE ?${qs}`,
        )
      }),
      fuzzParameters(150),
    )
  })
})
