/**
 * The RBAC matrix against a real Keystone: every endpoint × every persona, with the exact status.
 *
 * Personas (test/support/peers/keystone.ts): `admin`, `manager`, `member` and `reader` of project main;
 * `service` (role service in project service, its own token as X-Service-Token too); `other`
 * (member of another project); `nova` (main's member, with the service user's X-Service-Token, as
 * Nova calls); `none` (no token), `garbage` (a token Keystone does not know) and `revoked`.
 *
 * Targets are chosen so that a call the policy lets through changes nothing: unknown uuids (404),
 * invalid bodies (400), idempotent deletes. So 403 always means the policy (or the service-token
 * gate) refused, and anything else means it let the call through. Project main's accelerator
 * request shows isolation: another project's caller gets 404, not 403. The table is in
 * test/support/rbac-matrix.ts.
 *
 * Across projects (issue 27): the manager, member and reader of the second project try every v1
 * route and every route of 2.6–2.8 against the first project's objects (its request, a v1
 * attachment, a custody record, the device they hold, an admin's webhook): the exact status, no
 * answer showing any of its ids, and nothing of it changed (test/support/rbac-cross-project.ts).
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import pino from 'pino'
import type { FastifyInstance } from 'fastify'
import { createApp } from '../../src/api/app.js'
import { createKeystoneAuthenticator } from '../../src/api/keystone-auth.js'
import { HOST, startStack, type Stack } from '../api/stack.js'
import {
  apiAuthOptions,
  createPersonas,
  keystoneSkip,
  startKeystone,
  type Personas,
  type RunningKeystone,
} from '../support/peers/keystone.js'
import { PERSONAS, rbacRows, unbind, type Who } from '../support/rbac-matrix.js'
import {
  CROSS_PERSONAS,
  crossRows,
  secretsOf,
  type CrossWho,
  type FirstProject,
} from '../support/rbac-cross-project.js'

const skip = await keystoneSkip()

void describe('RBAC matrix against a real Keystone', { skip, timeout: 300_000 }, () => {
  let ks: RunningKeystone
  let people: Personas
  let stack: Stack
  let app: FastifyInstance
  let arq: string
  let first: FirstProject
  const headers = {} as Record<Who, Record<string, string>>
  const second = {} as Record<CrossWho, Record<string, string>>
  /** What the first project's objects look like to its admin (compared after the cross rows). */
  let snapshot: () => Promise<unknown>

  before(async () => {
    ks = await startKeystone()
    people = await createPersonas(ks, 'rbac')
    stack = await startStack({ autoActivate: true })
    const auth = createKeystoneAuthenticator(apiAuthOptions(ks, people))
    app = await createApp(
      { db: stack.db.db, conductor: stack.core.conductorClient, log: pino({ level: 'silent' }) },
      { auth },
    )
    const tokens = Object.fromEntries(
      await Promise.all(
        (['admin', 'manager', 'member', 'reader', 'service', 'other'] as const).map(async (p) => [
          p,
          await people.token(p),
        ]),
      ),
    )
    for (const p of ['admin', 'manager', 'member', 'reader', 'other'] as const)
      headers[p] = { 'x-auth-token': tokens[p] }
    headers.service = { 'x-auth-token': tokens.service, 'x-service-token': tokens.service }
    headers.nova = { 'x-auth-token': tokens.member, 'x-service-token': tokens.service }
    headers.none = {}
    headers.garbage = { 'x-auth-token': 'gAAAAABnot-a-real-token' }
    const revoked = await people.token('member')
    await ks.revokeToken(revoked)
    headers.revoked = { 'x-auth-token': revoked }
    // Project main's request, made by its member from a profile the admin made.
    const send = (who: Who, method: string, url: string, body?: unknown, minor?: string) =>
      app.inject({
        method: method as 'GET',
        url,
        headers: {
          host: HOST,
          ...headers[who],
          ...(minor === undefined ? {} : { 'openstack-api-version': `accelerator ${minor}` }),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
      })
    const dp = await send('admin', 'POST', '/v2/device_profiles', [
      { name: 'rbac-fpga', groups: [{ 'resources:FPGA': '1' }] },
    ])
    assert.equal(dp.statusCode, 201, dp.body)
    const created = await send('member', 'POST', '/v2/accelerator_requests', {
      device_profile_name: 'rbac-fpga',
    })
    assert.equal(created.statusCode, 201, created.body)
    arq = (created.json().arqs as { uuid: string; project_id: string }[])[0]!.uuid
    assert.equal(created.json().arqs[0].project_id, people.projects.main)
    first = await firstProjectObjects(send, arq, stack)
    // The second project's manager and reader (its member is `other`), one token each.
    const { other } = people.projects
    await ks.createUser('rbac-other-manager', other, ['manager', 'member', 'reader'])
    await ks.createUser('rbac-other-reader', other, ['reader'])
    const token = (user: string) => ks.issueToken(user, people.projectNames.other)
    second.manager = { 'x-auth-token': await token('rbac-other-manager') }
    second.member = headers.other
    second.reader = { 'x-auth-token': await token('rbac-other-reader') }
    snapshot = async () => {
      const read = async (url: string, minor = '2.8') =>
        (await send('admin', 'GET', url, undefined, minor)).json() as Record<string, unknown>
      const acc = await read(`/v1/accelerators/${first.accelerator}`)
      const device = await read(`/v2/devices/${first.device}`)
      const webhook = await read(`/v2/webhooks/${first.webhook}`)
      return {
        arq: await read(`/v2/accelerator_requests/${first.arq}`),
        accelerator: [acc.attachments, acc.acc_specs, acc.lifecycle],
        custody: await read(`/v2/custody/${first.custody}`),
        device: [device.status, device.lifecycle],
        webhook: [webhook.url, webhook.enabled, webhook.event_types],
        drivers: (await read('/v1/drivers')).drivers,
      }
    }
  })
  after(async () => {
    await app?.close()
    await stack?.close()
    await ks?.stop()
  })

  void it('answers every endpoint for every persona with the exact status', async () => {
    const wrong: string[] = []
    const table: string[] = []
    for (const [method, url, body, statuses, extra = {}] of rbacRows(arq)) {
      const expected = statuses.trim().split(/\s+/).map(Number)
      assert.equal(expected.length, PERSONAS.length, `${method} ${url}: one status per persona`)
      const at = (who: Who) => expected[who === 'revoked' ? PERSONAS.length : PERSONAS.indexOf(who)]
      const got: number[] = []
      expected.push(expected[PERSONAS.indexOf('garbage')]!)
      for (const who of [...PERSONAS, 'revoked'] as const) {
        const res = await app.inject({
          method: method as 'GET',
          url,
          headers: {
            host: HOST,
            ...headers[who],
            ...extra,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
        })
        got.push(res.statusCode)
        if (res.statusCode !== at(who))
          wrong.push(
            `${method} ${url} as ${who}: ${res.statusCode} (expected ${at(who)}): ${res.body.slice(0, 200)}`,
          )
      }
      table.push(`${method.padEnd(6)} ${url.padEnd(60)} ${got.join(' ')}`)
    }
    assert.deepEqual(wrong, [], `\n${table.join('\n')}`)
  })

  void it("a second project's manager, member and reader against the first project's objects", async () => {
    const before = await snapshot()
    const wrong: string[] = []
    const table: string[] = []
    for (const [method, url, body, statuses, extra = {}] of crossRows(first)) {
      const expected = statuses.trim().split(/\s+/).map(Number)
      assert.equal(expected.length, CROSS_PERSONAS.length, `${method} ${url}: one per persona`)
      const asked = url + JSON.stringify(body ?? null)
      // The first project's ids, except those the request itself names (a 404 may echo them).
      const secrets = secretsOf(first).filter((id) => !asked.includes(id))
      const got: number[] = []
      for (const [i, who] of CROSS_PERSONAS.entries()) {
        const res = await app.inject({
          method: method as 'GET',
          url,
          headers: {
            host: HOST,
            ...second[who],
            ...extra,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
        })
        got.push(res.statusCode)
        const said = `${method} ${url} as the second project's ${who}`
        if (res.statusCode !== expected[i])
          wrong.push(
            `${said}: ${res.statusCode} (expected ${expected[i]}): ${res.body.slice(0, 200)}`,
          )
        const shown = secrets.filter(
          (id) => res.body.includes(id) || JSON.stringify(res.headers).includes(id),
        )
        if (shown.length > 0)
          wrong.push(`${said} shows ${shown.join(', ')}: ${res.body.slice(0, 300)}`)
      }
      table.push(`${method.padEnd(6)} ${url.padEnd(80)} ${got.join(' ')}`)
    }
    assert.deepEqual(wrong, [], `\n${table.join('\n')}`)
    assert.deepEqual(await snapshot(), before, "the first project's objects changed")
  })

  void it('names the rule in a 403, and the service token when that is what is missing', async () => {
    const denied = await app.inject({
      method: 'GET',
      url: '/v2/devices',
      headers: { host: HOST, ...headers.member },
    })
    assert.match(denied.body, /Policy doesn't allow cyborg:device:get_all to be performed/)
    const unbound = await app.inject({
      method: 'PATCH',
      url: `/v2/accelerator_requests/${arq}`,
      headers: { host: HOST, 'content-type': 'application/json', ...headers.member },
      payload: JSON.stringify(unbind(arq)),
    })
    assert.match(unbound.body, /requires a service token/)
  })
})

type Send = (
  who: Who,
  method: string,
  url: string,
  body?: unknown,
  minor?: string,
) => Promise<{ statusCode: number; body: string; json(): unknown }>

/**
 * The first project's objects besides its request `arq`: its manager attaches node1's fake
 * accelerator to one instance (kept) and to another (detached: a custody record), and the admin
 * registers a disabled webhook.
 */
async function firstProjectObjects(send: Send, arq: string, stack: Stack): Promise<FirstProject> {
  const vm = (n: number) => `f1a57000-0000-4000-8000-${String(n).padStart(12, '0')}`
  const ok = async (status: number, ...args: Parameters<Send>) => {
    const res = await send(...args)
    assert.equal(res.statusCode, status, `${args[1]} ${args[2]}: ${res.body}`)
    return (res.body === '' ? {} : res.json()) as Record<string, unknown>
  }
  const listed = await ok(200, 'admin', 'GET', '/v1/accelerators')
  const fake = (listed.accelerators as { uuid: string; name: string }[]).find(
    (a) => a.name === 'node1_FakeDevice',
  )!
  const { uuid: device } = await stack.db.db
    .selectFrom('devices')
    .innerJoin('deployables', 'deployables.device_id', 'devices.id')
    .select('devices.uuid')
    .where('deployables.uuid', '=', fake.uuid)
    .executeTakeFirstOrThrow()
  const attached = await ok(200, 'manager', 'PUT', `/v1/accelerators/${fake.uuid}`, {
    instance_uuid: vm(1),
  })
  await ok(200, 'manager', 'PUT', `/v1/accelerators/${fake.uuid}`, { instance_uuid: vm(2) })
  await ok(204, 'manager', 'DELETE', `/v1/accelerators/${fake.uuid}?instance_uuid=${vm(2)}`)
  await stack.core.conductor!.cleaningIdle()
  const custody = await ok(
    200,
    'admin',
    'GET',
    `/v2/custody?instance_uuid=${vm(2)}`,
    undefined,
    '2.8',
  )
  const hook = await ok(201, 'admin', 'POST', '/v2/webhooks', {
    url: 'http://127.0.0.1:9/rbac-hook',
    event_types: ['accelerator.*'],
    enabled: false,
  })
  return {
    project: (await ok(200, 'manager', 'GET', `/v2/accelerator_requests/${arq}`))
      .project_id as string,
    arq,
    accelerator: fake.uuid,
    device,
    instance: vm(1),
    attachment: (attached.attachments as { arq_uuid: string }[])[0]!.arq_uuid,
    custody: (custody.custody_records as { uuid: string }[])[0]!.uuid,
    released: vm(2),
    webhook: hook.uuid as string,
  }
}
