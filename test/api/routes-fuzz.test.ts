/**
 * Fuzzing every route of the API (issue 27): v1, v2 with microversions 2.6–2.8 (capacity,
 * explain, quota, custody, clean, configure, program, webhooks) and the administration routes,
 * listed from the API's own OpenAPI documents, so that a new route is fuzzed without being named
 * here. Bodies shaped like each route's schema with one value made hostile, JSON nested far past
 * the limit, impossible times, malformed URLs and huge values, in bodies, query strings and path
 * parameters. Every answer is below 500, and every 4xx names the field or the problem.
 * A fixed seed in CI; any by hand: FUZZ_SEED=<n> FUZZ_RUNS=<n>.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import type { LightMyRequestResponse } from 'fastify'
import {
  bodyTexts,
  fuzzParameters,
  HOSTILE_STRINGS,
  nestedText,
  pathValues,
  queryStrings,
  sampleOf,
  variantsOf,
  withTextAtEveryPlace,
} from '../support/fuzz/api-fuzz.js'
import { startStack, type Stack } from './stack.js'

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
interface Route {
  method: Method
  path: string
  query: string[]
  body?: unknown
  /** The body with fewer properties (api-fuzz.ts variantsOf). */
  variants: unknown[]
}
type Operation = {
  parameters?: { name: string; in: string }[]
  requestBody?: { content: { 'application/json'?: { schema: object } } }
}

const json = { 'content-type': 'application/json' }
/** A 400 names the field at fault (quoted), the body, or the header or microversion it needs. */
const NAMES_A_FIELD = /'[^']+'|\bbody\b|Content-Type|microversion/
/** Any other 4xx says what went wrong in its own words, not a bare reason phrase. */
const BARE_REASON =
  /^(Bad Request|Not Found|Conflict|Forbidden|Unauthorized|Method Not Allowed|Not Acceptable|Locked)\.?$/i

void describe('every route: fuzzed input never gets a 500, every 4xx names the problem', () => {
  let s: Stack
  const routes: Route[] = []
  const known: Record<string, string[]> = {}
  const seen4xx = new Map<string, number>()

  before(async () => {
    s = await startStack({
      autoActivate: true,
      maxArqsPerRequest: 8,
      enabledDrivers: ['fake', 'remote'],
      // node2 has no agent: a fan-out to every agent waits this long for it, not 20 s.
      conductor: { driverAdmin: { listTimeoutMs: 250, actionTimeoutMs: 250 } },
    })
    const call = async (method: Method, url: string, body?: unknown) => {
      const res = await s.request({
        method,
        url,
        version: 'latest',
        ...(body === undefined ? {} : { headers: json, payload: JSON.stringify(body) }),
      })
      assert.ok(res.statusCode < 300, `${method} ${url}: ${res.body}`)
      return res.body === '' ? {} : (res.json() as Record<string, { uuid: string }[]>)
    }
    const dp = await call('POST', '/v2/device_profiles', [
      { name: 'dp-fuzz', groups: [{ 'resources:FPGA': '1' }] },
    ])
    const arqs = await call('POST', '/v2/accelerator_requests', { device_profile_name: 'dp-fuzz' })
    const hook = await call('POST', '/v2/webhooks', { url: 'http://127.0.0.1:9/h', enabled: false })
    const devices = (await call('GET', '/v2/devices')).devices!
    const deployables = (await call('GET', '/v2/deployables')).deployables!
    const accelerators = (await call('GET', '/v1/accelerators')).accelerators!
    const uuids = [
      devices[0]!.uuid,
      deployables[0]!.uuid,
      accelerators[0]!.uuid,
      arqs.arqs![0]!.uuid,
      (hook as unknown as { uuid: string }).uuid,
      (dp as unknown as { uuid: string }).uuid,
    ]
    known.uuid = uuids
    known.value = ['dp-fuzz', (dp as unknown as { uuid: string }).uuid]
    known.name = ['fake', 'remote', 'nope']
    for (const doc of ['/v2/openapi.json', '/v1/openapi.json']) {
      const paths = (await s.request({ url: doc })).json().paths as Record<
        string,
        Record<string, Operation>
      >
      for (const [path, ops] of Object.entries(paths)) {
        if (!path.startsWith('/v1/') && !path.startsWith('/v2/')) continue
        for (const [m, op] of Object.entries(ops)) {
          const schema = op.requestBody?.content['application/json']?.schema
          routes.push({
            method: m.toUpperCase() as Method,
            path,
            query: (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
            ...(schema === undefined ? {} : { body: sampleOf(schema, { uuid: uuids[3]! }) }),
            variants: schema === undefined ? [] : variantsOf(schema, { uuid: uuids[3]! }),
          })
        }
      }
    }
  })
  after(() => s.close())

  const check = (res: LightMyRequestResponse, what: string) => {
    assert.ok(res.statusCode < 500, `${what} → ${res.statusCode} ${res.body.slice(0, 500)}`)
    if (res.statusCode < 400) return
    const body = res.json() as { error_message?: { faultstring?: unknown } }
    const faultstring = body.error_message?.faultstring
    assert.equal(typeof faultstring, 'string', `${what}: ${res.body.slice(0, 300)}`)
    if (typeof faultstring !== 'string') return
    const said = `${what} → ${res.statusCode} ${faultstring}`
    if (res.statusCode === 400) assert.match(faultstring, NAMES_A_FIELD, said)
    else assert.ok(faultstring.length >= 15 && !BARE_REASON.test(faultstring), said)
    seen4xx.set(String(res.statusCode), (seen4xx.get(String(res.statusCode)) ?? 0) + 1)
  }
  const fill = (path: string, pick: (name: string) => string) =>
    path.replace(/\{(\w+)\}/g, (_, name: string) => pick(name))
  // A stream that takes its query never ends: a bad Last-Event-ID makes it answer 400 once the
  // query has been checked (its streaming is test/api/events.test.ts's).
  const streamStop = (url: string) =>
    url.split('?')[0]!.endsWith('/stream') ? { 'last-event-id': 'not-an-id' } : {}
  const send = (route: Route, url: string, payload?: string) =>
    s.request({
      method: route.method,
      url,
      version: 'latest',
      headers: { ...streamStop(url), ...(payload === undefined ? {} : json) },
      ...(payload === undefined ? {} : { payload }),
    })

  void it('covers the routes it should: every v1 and admin route, 2.6–2.8 and webhooks', () => {
    const names = new Set(routes.map((r) => `${r.method} ${r.path}`))
    for (const r of [
      'GET /v2/capacity',
      'POST /v2/device_profiles/{value}/explain',
      'GET /v2/quota',
      'GET /v2/custody',
      'POST /v2/devices/{uuid}/clean',
      'POST /v2/devices/{uuid}/configure',
      'PATCH /v2/deployables/{uuid}/program',
      'PATCH /v2/webhooks/{uuid}',
      'GET /v2/webhooks/{uuid}/deliveries',
      'PUT /v1/accelerators/{uuid}/acc_specs',
      'PATCH /v1/drivers/{name}',
      'POST /v1/discovery',
      'GET /v1/status',
    ])
      assert.ok(names.has(r), r)
    assert.ok(routes.length >= 45, `${routes.length} routes`)
  })

  void it('every route, every hostile value in every query parameter and at every place of its body', async () => {
    const strings = HOSTILE_STRINGS.filter((v) => v.length < 1000)
    for (const route of routes) {
      const url = fill(route.path, (name) => known[name]?.[0] ?? 'x')
      for (const q of route.query)
        for (const v of [...strings, 'x'.repeat(5000)]) {
          const target = `${url}?${new URLSearchParams({ [q]: v }).toString()}`
          check(await send(route, target), `${route.method} ${target.slice(0, 200)}`)
        }
      if (route.body === undefined) continue
      for (const text of [
        ...route.variants.flatMap((v) => withTextAtEveryPlace(v, nestedText(10_000, 'object'))),
        ...withTextAtEveryPlace(route.body, nestedText(5000, 'array')),
        nestedText(33, 'mixed'),
        JSON.stringify(route.body),
      ])
        check(await send(route, url, text), `${route.method} ${url} ${text.slice(0, 80)}`)
      const bodies = route.variants.flatMap((v) =>
        fc.sample(bodyTexts(v), { numRuns: 8, seed: 27 }),
      )
      for (const text of bodies)
        check(await send(route, url, text), `${route.method} ${url} ${text.slice(0, 300)}`)
    }
  })

  void it('random routes, path parameters, query strings and bodies', async () => {
    const uuidPick = () => pathValues(known.uuid!)
    const request = fc.constantFrom(...routes).chain((route) =>
      fc.record({
        route: fc.constant(route),
        params: fc.record({
          uuid: uuidPick(),
          value: pathValues(known.value!),
          name: pathValues(known.name!),
        }),
        query: queryStrings(route.query, known.uuid!),
        body: route.body === undefined ? fc.constant(undefined) : bodyTexts(route.body),
      }),
    )
    await fc.assert(
      fc.asyncProperty(request, async ({ route, params, query, body }) => {
        const url = fill(route.path, (name) => params[name as keyof typeof params] ?? 'x') + query
        check(
          await send(route, url, body),
          `${route.method} ${url.slice(0, 300)} ${body?.slice(0, 300) ?? ''}`,
        )
      }),
      fuzzParameters(300),
    )
    assert.ok((seen4xx.get('400') ?? 0) > 0)
  })
})
