/**
 * The Nova client against a recording HTTP endpoint that answers as Nova's
 * os-server-external-events controller does (nova/api/openstack/compute/server_external_events.py):
 * 200 when every event went to a host, 207 with per-event codes (404 unknown server, 422 no host,
 * 400 no tag) otherwise, also when no event was accepted.
 */
import assert from 'node:assert/strict'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, describe, it } from 'node:test'
import { ConfigError, UnavailableError } from '../domain/errors.js'
import { createNovaClient, novaSettings, type ArqBoundEvent, type NovaSettings } from './nova.js'

interface Recorded {
  method: string
  url: string
  headers: IncomingHttpHeaders
  body: unknown
  /** When the request arrived (ms since epoch). */
  at: number
}
type Answer = { status: number; body: unknown }

/** A Nova stand-in: records each request and answers with the next of `answers` (the last repeats). */
async function fakeNova(answers: ((body: { events: Record<string, unknown>[] }) => Answer)[]) {
  const requests: Recorded[] = []
  const server = createServer((req, res) => {
    let text = ''
    req.on('data', (chunk: Buffer) => (text += chunk.toString()))
    req.on('end', () => {
      const body = JSON.parse(text) as { events: Record<string, unknown>[] }
      requests.push({
        method: req.method!,
        url: req.url!,
        headers: req.headers,
        body,
        at: Date.now(),
      })
      const answer = answers[Math.min(requests.length, answers.length) - 1]!(body)
      res
        .writeHead(answer.status, { 'content-type': 'application/json' })
        .end(JSON.stringify(answer.body))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  after(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { url: `http://127.0.0.1:${port}/v2.1`, requests }
}

/** Nova's answer when every event has the given codes (in order), as the controller builds it. */
const withCodes =
  (...codes: number[]) =>
  (body: { events: Record<string, unknown>[] }): Answer => ({
    status: codes.every((c) => c === 200) ? 200 : 207,
    body: {
      events: body.events.map((e, i) => ({
        ...e,
        code: codes[i],
        status: codes[i] === 200 ? 'completed' : 'failed',
      })),
    },
  })
/** A Nova fault body (nova/api/openstack/wsgi.py Fault: `{<fault name>: {code, message}}`). */
const FAULTS: Record<number, string> = {
  400: 'badRequest',
  403: 'forbidden',
  503: 'serviceUnavailable',
}
const error = (status: number, message: string) => (): Answer => ({
  status,
  body: { [FAULTS[status] ?? 'computeFault']: { code: status, message } },
})

const instance = '6f1b2a52-7d1e-4c55-9a0b-5a3c2c6d2f11'
const arqs: ArqBoundEvent[] = [
  { instanceUuid: instance, arqUuid: 'a1d3b7c0-0000-4000-8000-000000000001', status: 'completed' },
  { instanceUuid: instance, arqUuid: 'a1d3b7c0-0000-4000-8000-000000000002', status: 'failed' },
]
const client = (url: string, extra: Partial<NovaSettings> = {}) =>
  createNovaClient({
    endpoint: url,
    token: 'admin',
    timeoutMs: 2000,
    backoffMs: [5, 10, 20],
    ...extra,
  })

describe('Nova client: accelerator-request-bound events', () => {
  it('sends one POST with the 2.82 microversion headers and the events Nova expects', async () => {
    const nova = await fakeNova([withCodes(200, 200)])
    const result = await client(nova.url + '/').sendArqBoundEvents(arqs)
    assert.equal(nova.requests.length, 1)
    const [req] = nova.requests
    assert.equal(req!.method, 'POST')
    assert.equal(req!.url, '/v2.1/os-server-external-events')
    assert.equal(req!.headers['openstack-api-version'], 'compute 2.82')
    assert.equal(req!.headers['x-openstack-nova-api-version'], '2.82')
    assert.equal(req!.headers['x-auth-token'], 'admin')
    assert.equal(req!.headers['x-service-token'], undefined)
    assert.match(req!.headers['content-type']!, /^application\/json/)
    assert.deepEqual(req!.body, {
      events: [
        {
          name: 'accelerator-request-bound',
          server_uuid: instance,
          tag: arqs[0]!.arqUuid,
          status: 'completed',
        },
        {
          name: 'accelerator-request-bound',
          server_uuid: instance,
          tag: arqs[1]!.arqUuid,
          status: 'failed',
        },
      ],
    })
    assert.deepEqual(result, {
      httpStatus: 200,
      attempts: 1,
      ok: true,
      events: arqs.map((a) => ({ ...a, outcome: 'delivered', code: 200 })),
    })
  })

  it('reads per-event codes from a 207: 422 and 404 are not-waiting, 400 is rejected', async () => {
    const three = [
      ...arqs,
      {
        instanceUuid: instance,
        arqUuid: 'a1d3b7c0-0000-4000-8000-000000000003',
        status: 'completed' as const,
      },
    ]
    const nova = await fakeNova([withCodes(200, 422, 400)])
    const result = await client(nova.url).sendArqBoundEvents(three)
    assert.equal(result.httpStatus, 207)
    assert.deepEqual(
      result.events.map((e) => [e.outcome, e.code]),
      [
        ['delivered', 200],
        ['not-waiting', 422],
        ['rejected', 400],
      ],
    )
    assert.equal(result.ok, false)
    const unknown = await fakeNova([withCodes(404, 404)])
    const gone = await client(unknown.url).sendArqBoundEvents(arqs)
    assert.deepEqual(
      [gone.httpStatus, gone.ok, gone.events.map((e) => e.outcome)],
      [207, true, ['not-waiting', 'not-waiting']],
    )
  })

  it('accepts a 207 where every event is 422 (server not on a host yet), without retrying', async () => {
    const nova = await fakeNova([withCodes(422, 422)])
    const result = await client(nova.url).sendArqBoundEvents(arqs)
    assert.equal(nova.requests.length, 1)
    assert.deepEqual([result.httpStatus, result.ok, result.attempts], [207, true, 1])
    assert.deepEqual(
      result.events.map((e) => e.code),
      [422, 422],
    )
  })

  it('retries a 5xx with backoff, then reports the success', async () => {
    const nova = await fakeNova([error(503, 'down'), error(500, 'oops'), withCodes(200, 200)])
    const result = await client(nova.url, { backoffMs: [30, 60, 120] }).sendArqBoundEvents(arqs)
    assert.equal(nova.requests.length, 3)
    const [first, second, third] = nova.requests.map((r) => r.at)
    assert.ok(
      second! - first! >= 29 && third! - second! >= 59,
      `waits of ${second! - first!} and ${third! - second!} ms`,
    )
    assert.deepEqual(nova.requests[2]!.body, nova.requests[0]!.body)
    assert.deepEqual([result.httpStatus, result.attempts, result.ok], [200, 3, true])
  })

  it("never retries a 4xx: every event is rejected with Nova's answer", async () => {
    const refusals = [
      error(400, 'Invalid input for field/attribute events.'),
      error(
        403,
        'Policy does not allow os_compute_api:os-server-external-events:create to be performed.',
      ),
      error(406, 'Version 2.82 is not supported by the API. Minimum is 2.1 and maximum is 2.79.'),
    ]
    for (const refusal of refusals) {
      const nova = await fakeNova([refusal, withCodes(200, 200)])
      const result = await client(nova.url).sendArqBoundEvents(arqs)
      const { status } = refusal()
      assert.equal(nova.requests.length, 1)
      assert.deepEqual([result.httpStatus, result.attempts, result.ok], [status, 1, false])
      assert.deepEqual(
        result.events.map((e) => [e.outcome, e.code]),
        [
          ['rejected', status],
          ['rejected', status],
        ],
      )
      assert.match(
        result.error!,
        new RegExp(`^Nova POST /os-server-external-events answered ${status}: `),
      )
    }
  })

  it('throws UnavailableError naming Nova and the last answer once retries are exhausted', async () => {
    const nova = await fakeNova([error(502, 'bad gateway')])
    await assert.rejects(client(nova.url).sendArqBoundEvents(arqs), (err: unknown) => {
      assert.ok(err instanceof UnavailableError)
      assert.match(
        err.message,
        /^Nova POST \/os-server-external-events answered 502: .*\(gave up after 4 attempts\)$/,
      )
      return true
    })
    assert.equal(nova.requests.length, 4)
  })

  it('retries a refused connection, then throws UnavailableError', async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const { port } = closed.address() as AddressInfo
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    let calls = 0
    const nova = client(`http://127.0.0.1:${port}/v2.1`, { onCall: () => void calls++ })
    await assert.rejects(
      nova.sendArqBoundEvents(arqs),
      /^UnavailableError: Nova POST \/os-server-external-events: ECONNREFUSED \(gave up after 4 attempts\)$/,
    )
    assert.equal(calls, 4)
  })

  it('sends X-Service-Token when a service token is configured', async () => {
    const nova = await fakeNova([withCodes(200, 200)])
    const settings = novaSettings({
      auth_type: 'admin_token',
      endpoint_override: nova.url,
      token: 'user',
      service_token: 'svc',
    })!
    await createNovaClient({ ...settings, backoffMs: [] }).sendArqBoundEvents(arqs.slice(0, 1))
    assert.equal(nova.requests[0]!.headers['x-auth-token'], 'user')
    assert.equal(nova.requests[0]!.headers['x-service-token'], 'svc')
  })

  it('sends nothing for no events (Nova requires at least one)', async () => {
    const nova = await fakeNova([withCodes()])
    assert.deepEqual(await client(nova.url).sendArqBoundEvents([]), {
      httpStatus: 0,
      attempts: 0,
      events: [],
      ok: true,
    })
    assert.equal(nova.requests.length, 0)
  })
})

describe('novaSettings', () => {
  const base = {
    auth_type: 'admin_token' as const,
    endpoint_override: 'http://nova:8774/v2.1',
    token: 't',
  }
  it('builds the settings from [nova]', () => {
    assert.deepEqual(novaSettings(base), {
      endpoint: 'http://nova:8774/v2.1',
      token: 't',
      timeoutMs: 30000,
    })
    assert.deepEqual(
      novaSettings({ auth_type: 'none', endpoint_override: 'http://nova:8774/v2.1', timeout: 5 }),
      {
        endpoint: 'http://nova:8774/v2.1',
        timeoutMs: 5000,
      },
    )
  })
  it('answers null without endpoint_override and auth_type = none (nobody to notify)', () => {
    assert.equal(novaSettings({ auth_type: 'none' }), null)
  })
  it('refuses what cannot work, naming the option', () => {
    const refused = (opts: Parameters<typeof novaSettings>[0], re: RegExp) =>
      assert.throws(
        () => novaSettings(opts),
        (err: unknown) => err instanceof ConfigError && re.test(err.message),
      )
    refused(
      { ...base, auth_type: 'password' },
      /^\[nova\] auth_url is required when auth_type = password$/,
    )
    refused(
      { ...base, token: undefined },
      /^\[nova\] token is required when auth_type = admin_token$/,
    )
    refused({ auth_type: 'admin_token', token: 't' }, /^\[nova\] endpoint_override is required/)
    refused(
      { ...base, endpoint_override: 'http://nova:8774/' },
      /^\[nova\] endpoint_override must include .* http:\/\/nova:8774\/v2\.1$/,
    )
  })
})
