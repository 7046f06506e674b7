/**
 * Issue 13: a protocol-level fuzz of `cyborg up` over real sockets, seeded and bounded. Every route
 * of v1 and v2, every body framing, odd content types, Expect, HEAD and OPTIONS, pipelining and raw
 * garbage (test/support/fuzz/http-fuzz.ts). Each connection must end within its deadline with
 * well-formed answers and no 5xx (or, when the request can never be complete, with the server's
 * close); afterwards the server is healthy, logged no error, and holds no leftover connection.
 * FUZZ_SEED and FUZZ_RUNS reproduce or widen a run.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readlinkSync } from 'node:fs'
import fc from 'fast-check'
import { startService, type RunningService } from '../support/service.js'
import { rawExchange, routePaths, type RawExchange } from '../support/fuzz/raw-http.js'
import { fuzzCases, type FuzzCase, type ParamValues } from '../support/fuzz/http-fuzz.js'
import { createTestApp } from '../support/api-app.js'

const SEED = Number(process.env.FUZZ_SEED ?? 20261125)
const RUNS = Number(process.env.FUZZ_RUNS ?? 3000)
const PARALLEL = 16
const LIMITS = { headers: 2, request: 3, handler: 10, keepalive: 2, socket: 15 }

const json = { 'content-type': 'application/json' }

/** The API's route templates, from an in-process app (the spawned one has the same code). */
async function apiRoutes(): Promise<string[]> {
  const t = await createTestApp()
  try {
    await t.app.ready()
    return routePaths(t.app.printRoutes({ commonPrefix: false }))
  } finally {
    await t.close()
  }
}

/** Open TCP sockets of process `pid` (listeners included). */
function socketCount(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).filter((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')
    } catch {
      return false
    }
  }).length
}

/** What is wrong with the answer to `c`, or undefined. */
function problem(c: FuzzCase, x: RawExchange): string | undefined {
  if (x.timedOut) return `no answer and no close within the deadline (${x.elapsedMs} ms)`
  if (x.malformed !== '') return x.malformed
  for (const r of x.responses) {
    if (r.status >= 500) return `status ${r.status}: ${r.body}`
    const isJson = r.headers['content-type']?.startsWith('application/json') ?? false
    if (r.status >= 400 && isJson && r.body !== '' && !r.body.includes('error_message'))
      return `error without error_message: ${r.body}`
  }
  if (!c.incomplete && !c.refused && x.responses.length === 0) return 'closed without an answer'
  if (x.responses.length < c.methods.length && !x.closed)
    return 'fewer answers than requests on an open connection'
  return undefined
}

void describe(`protocol fuzz of cyborg up over real sockets (seed ${SEED}, ${RUNS} connections)`, () => {
  let service: RunningService
  let params: ParamValues
  let routes: string[]
  before(async () => {
    routes = await apiRoutes()
    service = await startService({
      env: {
        CYBORG_LOG_LEVEL: 'warn',
        CYBORG_AGENT__AUTO_ACTIVATE: 'true',
        CYBORG_DEFAULT__RPC_RESPONSE_TIMEOUT: '5',
        CYBORG_API__HEADERS_TIMEOUT: String(LIMITS.headers),
        CYBORG_API__REQUEST_TIMEOUT: String(LIMITS.request),
        CYBORG_API__HANDLER_TIMEOUT: String(LIMITS.handler),
        CYBORG_API__KEEPALIVE_TIMEOUT: String(LIMITS.keepalive),
        CYBORG_API__CLIENT_SOCKET_TIMEOUT: String(LIMITS.socket),
      },
      ready: async (u) =>
        ((await (await fetch(`${u}/v2/devices`)).json()) as { devices: unknown[] }).devices.length >
        0,
    })
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${service.url}${path}`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify(body),
      })
      const text = await res.text()
      assert.equal(res.status, 201, `${path}: ${text}`)
      return JSON.parse(text) as Record<string, unknown>
    }
    const get = async <T>(path: string) =>
      (await (await fetch(`${service.url}${path}`)).json()) as T
    const profile = await post('/v2/device_profiles', [
      { name: 'fuzz-dp', groups: [{ 'resources:FPGA': '1' }] },
    ])
    const arqs = (await post('/v2/accelerator_requests', { device_profile_name: 'fuzz-dp' }))
      .arqs as { uuid: string }[]
    const uuids = (list: { uuid: string }[]) => list.map((x) => x.uuid)
    const devices = uuids((await get<{ devices: { uuid: string }[] }>('/v2/devices')).devices)
    const deployables = uuids(
      (await get<{ deployables: { uuid: string }[] }>('/v2/deployables')).deployables,
    )
    const attributes = uuids(
      (await get<{ attributes: { uuid: string }[] }>('/v2/attributes')).attributes,
    )
    params = {
      uuid: [...devices, ...deployables, ...attributes, ...uuids(arqs)],
      value: ['fuzz-dp', profile.uuid as string],
      name: ['fake', 'nvidia-gpu'],
    }
  })
  after(async () => {
    const code = await service.stop()
    assert.equal(code, 0, service.output().slice(-2000))
  })

  void it("the issue's two curl commands are answered at once", async () => {
    for (const [line, status] of [
      ['DELETE /v2/device_profiles/nonexistent', 404],
      ['POST /v2/accelerator_requests', 400],
    ] as const) {
      const x = await rawExchange(
        service.port,
        `${line} HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n\r\n`,
        { deadlineMs: 5000 },
      )
      assert.equal(x.timedOut, false, `${line}: no answer`)
      assert.equal(x.responses[0]?.status, status, JSON.stringify(x))
    }
  })

  void it('every connection ends well-formed, in time, without a 5xx, and the server stays healthy', async () => {
    assert.ok(routes.length >= 30, `routes: ${routes.join(' ')}`)
    const baseline = socketCount(service.child.pid!)
    const cases = fc.sample(fuzzCases(routes, params), { seed: SEED, numRuns: RUNS })
    const failures: string[] = []
    let next = 0
    const worker = async () => {
      while (next < cases.length) {
        const c = cases[next++]!
        const x = await rawExchange(service.port, c.bytes, {
          responses: c.methods.length,
          methods: c.methods,
          untilClosed: c.incomplete,
          deadlineMs: (c.incomplete ? LIMITS.request + 4 : LIMITS.handler + 2) * 1000,
        })
        const wrong = problem(c, x)
        if (wrong !== undefined)
          failures.push(
            `${wrong}\n  sent: ${JSON.stringify(c.bytes.toString('latin1').slice(0, 600))}`,
          )
      }
    }
    await Promise.all(Array.from({ length: PARALLEL }, worker))
    assert.deepEqual(
      failures.slice(0, 10),
      [],
      `${failures.length} of ${cases.length} connections went wrong (seed ${SEED})`,
    )

    const health = await fetch(`${service.url}/healthcheck`)
    assert.equal(health.status, 200)
    assert.equal((await fetch(`${service.url}/v2/accelerator_requests`)).status, 200)
    // Every fuzz connection is gone once keep-alive has run out (fetch's own one included).
    await new Promise((r) => setTimeout(r, (LIMITS.keepalive + 2) * 1000))
    assert.ok(
      socketCount(service.child.pid!) <= baseline,
      `sockets: ${socketCount(service.child.pid!)} now, ${baseline} before`,
    )
    const errors = service
      .output()
      .split('\n')
      .filter((l) => /"level":(5|6)0/.test(l))
    assert.deepEqual(errors, [], 'the server logged errors')
  })
})
