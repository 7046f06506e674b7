/**
 * `/v2/webhooks` over the in-process stack: admin only (a project member gets 403 everywhere),
 * every 4xx names its field, the secret is shown by the create answer and never again, events
 * reach a receiver signed with that secret, a disabled endpoint gets nothing new, and a receiver
 * that never answers ends up with dead letters visible through the API.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import type { FastifyInstance } from 'fastify'
import { createApp } from '../../src/api/app.js'
import type { Authenticator } from '../../src/api/auth.js'
import { freezeContext } from '../../src/domain/request-context.js'
import { startReceiver, waitFor, type Receiver } from '../support/webhook-receiver.js'
import { fault, HOST, startStack, type Stack } from './stack.js'

const json = { 'content-type': 'application/json' }
const MISSING = '00000000-0000-4000-8000-0000000000aa'

/** A member of project p1 (token `member`); any other token is refused by the policy only. */
const memberAuth: Authenticator = {
  strategy: 'keystone',
  authenticate: () =>
    freezeContext({
      userId: 'u1',
      projectId: 'p1',
      roles: ['member', 'reader'],
      isAdmin: false,
      systemScope: false,
      serviceRoles: [],
      serviceToken: false,
      authStrategy: 'keystone',
    }),
}

void describe('v2 webhooks', () => {
  let s: Stack
  let member: FastifyInstance
  let receiver: Receiver
  const post = (body: unknown) =>
    s.request({ method: 'POST', url: '/v2/webhooks', headers: json, payload: JSON.stringify(body) })
  const createArq = async () => {
    const res = await s.request({
      method: 'POST',
      url: '/v2/accelerator_requests',
      headers: json,
      payload: JSON.stringify({ device_profile_name: 'dp-hook' }),
    })
    assert.equal(res.statusCode, 201, res.body)
    return (res.json() as { arqs: { uuid: string }[] }).arqs[0]!.uuid
  }

  before(async () => {
    s = await startStack({
      autoActivate: true,
      conductor: {
        webhooks: { timeoutMs: 1000, maxAttempts: 2, backoffMs: 10, pollIntervalMs: 20 },
      },
    })
    member = await createApp(
      { db: s.db.db, conductor: s.core.conductorClient, log: pino({ level: 'silent' }) },
      { auth: memberAuth },
    )
    receiver = await startReceiver()
    const profile = [{ name: 'dp-hook', groups: [{ 'resources:FPGA': '1' }] }]
    const res = await s.request({
      method: 'POST',
      url: '/v2/device_profiles',
      headers: json,
      payload: JSON.stringify(profile),
    })
    assert.equal(res.statusCode, 201, res.body)
  })
  after(async () => {
    await member?.close()
    await receiver?.close()
    await s?.close()
  })

  it('is for admins only: a project member gets 403 on every operation', async () => {
    const ops: [string, string, unknown][] = [
      ['GET', '/v2/webhooks', undefined],
      ['POST', '/v2/webhooks', { url: 'http://127.0.0.1:9/' }],
      ['GET', `/v2/webhooks/${MISSING}`, undefined],
      ['PATCH', `/v2/webhooks/${MISSING}`, { enabled: false }],
      ['DELETE', `/v2/webhooks/${MISSING}`, undefined],
      ['GET', `/v2/webhooks/${MISSING}/deliveries`, undefined],
    ]
    for (const [method, url, body] of ops) {
      const res = await member.inject({
        method: method as 'GET',
        url,
        headers: { host: HOST, 'x-auth-token': 'member', ...(body ? json : {}) },
        ...(body ? { payload: JSON.stringify(body) } : {}),
      })
      assert.equal(res.statusCode, 403, `${method} ${url}: ${res.body}`)
      assert.match(fault(res), /Policy doesn't allow cyborg:webhook:/)
    }
  })

  it('a URL is an absolute http(s) URL with a host, stored exactly as written (issue 27)', async () => {
    for (const url of [
      'http:///127.0.0.1:17798/x',
      'http:///x',
      'http://example.com/x#',
      'http://example.com/x#top',
      'http://example.com:0/x',
      'http:/example.com/x',
      'HTTP://Example.com:80/x',
      'http://127.1/x',
      'http://example.com/a/../x',
      'http://example.com/a b',
      ' http://example.com/x',
    ]) {
      const res = await post({ url })
      assert.equal(res.statusCode, 400, `${url}: ${res.body}`)
      assert.match(fault(res), /'url'/, url)
    }
    for (const url of ['http://127.0.0.1:17798/x', 'https://[::1]:8443/hook?a=1', 'http://h:1']) {
      const res = await post({ url })
      assert.equal(res.statusCode, 201, `${url}: ${res.body}`)
      const { uuid } = res.json() as { uuid: string }
      const shown = await s.request({ url: `/v2/webhooks/${uuid}` })
      assert.equal((shown.json() as { url: string }).url, url)
      const patched = await s.request({
        method: 'PATCH',
        url: `/v2/webhooks/${uuid}`,
        headers: json,
        payload: JSON.stringify({ url: 'http:///x' }),
      })
      assert.equal(patched.statusCode, 400, patched.body)
      assert.match(fault(patched), /'url'.*host/)
      await s.request({ method: 'DELETE', url: `/v2/webhooks/${uuid}` })
    }
  })

  it('names the field of every bad input', async () => {
    const cases: [unknown, string][] = [
      [{}, 'url'],
      [{ url: 'ftp://example.com/' }, 'url'],
      [{ url: 'http://user:pw@example.com/' }, 'url'],
      [{ url: 'not a url' }, 'url'],
      [{ url: 'http://example.com/', event_types: 'accelerator.arq.*' }, 'event_types'],
      [
        { url: 'http://example.com/', event_types: ['accelerator.arq.bound', 'nope'] },
        'event_types[1]',
      ],
      [{ url: 'http://example.com/', event_types: ['accelerator.nothing.*'] }, 'event_types[0]'],
      [{ url: 'http://example.com/', project_ids: ['ok', 'bad id'] }, 'project_ids[1]'],
      [{ url: 'http://example.com/', enabled: 'yes' }, 'enabled'],
      [{ url: 'http://example.com/', description: 'x'.repeat(256) }, 'description'],
      [{ url: 'http://example.com/', secret: 'whsec_mine' }, 'secret'],
      [[{ url: 'http://example.com/' }], 'body'],
    ]
    for (const [body, field] of cases) {
      const res = await post(body)
      assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`)
      assert.ok(fault(res).includes(`'${field}'`), `${JSON.stringify(body)} → ${fault(res)}`)
    }
    const created = await post({ url: 'http://example.com/' })
    const { uuid } = created.json() as { uuid: string }
    const patch = await s.request({
      method: 'PATCH',
      url: `/v2/webhooks/${uuid}`,
      headers: json,
      payload: '{}',
    })
    assert.equal(patch.statusCode, 400)
    assert.match(fault(patch), /'body'/)
    for (const [query, field] of [
      ['state=lost', 'state'],
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      [`marker=${MISSING}`, 'marker'],
    ]) {
      const res = await s.request({ url: `/v2/webhooks/${uuid}/deliveries?${query}` })
      assert.equal(res.statusCode, 400, `${query}: ${res.body}`)
      assert.ok(fault(res).includes(`'${field}'`), fault(res))
    }
    for (const url of [`/v2/webhooks/${MISSING}`, '/v2/webhooks/not-a-uuid']) {
      assert.equal((await s.request({ url })).statusCode, 404, url)
    }
    assert.equal(
      (await s.request({ method: 'DELETE', url: `/v2/webhooks/${uuid}` })).statusCode,
      204,
    )
  })

  it('shows the secret once, and delivers signed events with it', async () => {
    const res = await post({
      url: receiver.url,
      event_types: ['accelerator.arq.*'],
      description: 'billing',
    })
    assert.equal(res.statusCode, 201, res.body)
    const created = res.json() as Record<string, unknown> & { uuid: string; secret: string }
    assert.match(created.secret, /^whsec_[A-Za-z0-9+/]+=*$/)
    assert.ok(Buffer.from(created.secret.slice(6), 'base64').length >= 24)
    assert.deepEqual(created.event_types, ['accelerator.arq.*'])
    assert.equal(created.enabled, true)
    receiver.secret = created.secret
    const one = await s.request({ url: `/v2/webhooks/${created.uuid}` })
    const list = await s.request({ url: '/v2/webhooks' })
    for (const body of [one.body, list.body])
      assert.ok(!body.includes(created.secret) && !body.includes('"secret"'), body)
    assert.deepEqual((one.json() as { deliveries: unknown }).deliveries, {
      pending: 0,
      delivered: 0,
      dead: 0,
    })

    const arq = await createArq()
    await waitFor(() => receiver.accepted().length === 1, 'the arq.created delivery')
    const [got] = receiver.received
    assert.equal(got!.invalid, null, 'signed with the secret the create answer showed')
    assert.equal(got!.body.type, 'accelerator.arq.created')
    assert.equal(got!.body.data.resource_uuid, arq)
    // The receiver has the request before the dispatcher has its answer recorded.
    let row: Record<string, unknown> | undefined
    await waitFor(async () => {
      const deliveries = await s.request({ url: `/v2/webhooks/${created.uuid}/deliveries` })
      ;[row] = (deliveries.json() as { deliveries: Record<string, unknown>[] }).deliveries
      return row?.state !== 'pending'
    }, 'the attempt recorded')
    assert.equal(row!.event_uuid, got!.id)
    assert.equal(row!.state, 'delivered')
    assert.equal(row!.last_status, 204)

    const off = await s.request({
      method: 'PATCH',
      url: `/v2/webhooks/${created.uuid}`,
      headers: json,
      payload: JSON.stringify({ enabled: false }),
    })
    assert.equal(off.statusCode, 200, off.body)
    assert.equal((off.json() as { enabled: boolean }).enabled, false)
    assert.ok(!off.body.includes('secret'))
    await createArq()
    await s.core.conductor!.drainEvents()
    await new Promise((r) => setTimeout(r, 100))
    assert.equal(receiver.received.length, 1, 'a disabled endpoint gets nothing new')
  })

  it('shows dead letters once every attempt failed', async () => {
    const res = await post({
      url: 'http://127.0.0.1:9/closed',
      event_types: ['accelerator.arq.created'],
    })
    assert.equal(res.statusCode, 201, res.body)
    const { uuid } = res.json() as { uuid: string }
    const arq = await createArq()
    let dead: Record<string, unknown>[] = []
    await waitFor(async () => {
      const r = await s.request({ url: `/v2/webhooks/${uuid}/deliveries?state=dead` })
      dead = (r.json() as { deliveries: Record<string, unknown>[] }).deliveries
      return dead.length === 1
    }, 'a dead letter')
    assert.equal(dead[0]!.event_type, 'accelerator.arq.created')
    assert.equal(dead[0]!.attempts, 2)
    assert.equal(dead[0]!.last_status, null)
    assert.match(String(dead[0]!.last_error), /no answer/)
    const one = await s.request({ url: `/v2/webhooks/${uuid}` })
    assert.deepEqual((one.json() as { deliveries: unknown }).deliveries, {
      pending: 0,
      delivered: 0,
      dead: 1,
    })
    const pending = await s.request({ url: `/v2/webhooks/${uuid}/deliveries?state=pending` })
    assert.deepEqual(pending.json(), { deliveries: [] })
    assert.ok(arq)
    const del = await s.request({ method: 'DELETE', url: `/v2/webhooks/${uuid}` })
    assert.equal(del.statusCode, 204)
    assert.equal((await s.request({ url: `/v2/webhooks/${uuid}` })).statusCode, 404)
    assert.equal(
      (await s.request({ method: 'DELETE', url: `/v2/webhooks/${uuid}` })).statusCode,
      404,
    )
  })
})
