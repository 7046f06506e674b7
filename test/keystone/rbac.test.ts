/**
 * The RBAC matrix against a real Keystone: every endpoint × every persona, with the exact status.
 *
 * Personas (test/support/keystone.ts): `admin`, `manager`, `member` and `reader` of project main;
 * `service` (role service in project service, its own token as X-Service-Token too); `other`
 * (member of another project); `nova` (main's member, with the service user's X-Service-Token, as
 * Nova calls); `none` (no token), `garbage` (a token Keystone does not know) and `revoked`.
 *
 * Targets are chosen so that a call the policy lets through changes nothing: unknown uuids (404),
 * invalid bodies (400), idempotent deletes. So 403 always means the policy (or the service-token
 * gate) refused, and anything else means it let the call through. Project main's accelerator
 * request shows isolation: another project's caller gets 404, not 403.
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
} from '../support/keystone.js'

const skip = await keystoneSkip()

const PERSONAS = [
  'admin',
  'manager',
  'member',
  'reader',
  'service',
  'other',
  'nova',
  'none',
  'garbage',
] as const
/** `revoked` (a real token, revoked before use: what an expired one gets too) is asked as well, and must fare as `garbage`. */
type Who = (typeof PERSONAS)[number] | 'revoked'
const MISSING = '0dd00000-0000-4000-8000-00000000beef'

/** One row: a request, and the status for each persona in PERSONAS order. */
type Row = [method: string, url: string, body: unknown, statuses: string]

void describe('RBAC matrix against a real Keystone', { skip, timeout: 300_000 }, () => {
  let ks: RunningKeystone
  let people: Personas
  let stack: Stack
  let app: FastifyInstance
  let arq: string
  const headers = {} as Record<Who, Record<string, string>>

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
    const send = (who: Who, method: string, url: string, body?: unknown) =>
      app.inject({
        method: method as 'GET',
        url,
        headers: {
          host: HOST,
          ...headers[who],
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
  })
  after(async () => {
    await app?.close()
    await stack?.close()
    await ks?.stop()
  })

  const unbind = () => ({
    [arq]: [
      { path: '/hostname', op: 'remove' },
      { path: '/device_rp_uuid', op: 'remove' },
      { path: '/instance_uuid', op: 'remove' },
    ],
  })

  //                                                                       admin mgr member reader service other nova none garbage
  const rows = (): Row[] => [
    [
      'GET',
      '/',
      undefined,
      '                                                200 200 200 200 200 200 200 200 200',
    ],
    [
      'GET',
      '/v2',
      undefined,
      '                                              200 200 200 200 200 200 200 200 200',
    ],
    [
      'GET',
      '/v1',
      undefined,
      '                                              200 200 200 200 200 200 200 200 200',
    ],
    [
      'GET',
      '/healthcheck',
      undefined,
      '                                      200 200 200 200 200 200 200 200 200',
    ],
    [
      'GET',
      '/v2/device_profiles',
      undefined,
      '                               200 200 200 200 403 200 200 401 401',
    ],
    [
      'GET',
      `/v2/device_profiles/${MISSING}`,
      undefined,
      '                    404 404 404 404 403 404 404 401 401',
    ],
    [
      'POST',
      '/v2/device_profiles',
      [],
      '                                     400 403 403 403 403 403 403 401 401',
    ],
    [
      'DELETE',
      `/v2/device_profiles/${MISSING}`,
      undefined,
      '                 404 403 403 403 403 403 403 401 401',
    ],
    [
      'POST',
      '/v2/accelerator_requests',
      { device_profile_name: 'nope' },
      '   404 404 404 403 404 404 404 401 401',
    ],
    [
      'GET',
      '/v2/accelerator_requests',
      undefined,
      '                          200 200 200 200 403 200 200 401 401',
    ],
    [
      'GET',
      `/v2/accelerator_requests/${arq}`,
      undefined,
      '                   200 200 200 200 403 404 200 401 401',
    ],
    [
      'PATCH',
      `/v2/accelerator_requests/${arq}`,
      unbind(),
      '                  403 403 403 403 404 403 202 401 401',
    ],
    [
      'DELETE',
      `/v2/accelerator_requests?instance=${MISSING}`,
      undefined,
      '  403 403 403 403 204 403 204 401 401',
    ],
    [
      'DELETE',
      `/v2/accelerator_requests/${MISSING}`,
      undefined,
      '           404 404 404 403 404 404 404 401 401',
    ],
    [
      'GET',
      '/v2/devices',
      undefined,
      '                                       200 200 403 403 403 403 403 401 401',
    ],
    [
      'GET',
      `/v2/devices/${MISSING}`,
      undefined,
      '                            404 404 403 403 403 403 403 401 401',
    ],
    [
      'POST',
      `/v2/devices/${MISSING}/disable`,
      undefined,
      '                   404 403 403 403 403 403 403 401 401',
    ],
    [
      'POST',
      `/v2/devices/${MISSING}/enable`,
      undefined,
      '                    404 403 403 403 403 403 403 401 401',
    ],
    [
      'POST',
      `/v2/devices/${MISSING}/ready`,
      undefined,
      '                     404 404 403 403 403 403 403 401 401',
    ],
    [
      'GET',
      '/v2/deployables',
      undefined,
      '                                   200 200 403 403 403 403 403 401 401',
    ],
    [
      'GET',
      `/v2/deployables/${MISSING}`,
      undefined,
      '                        404 404 403 403 403 403 403 401 401',
    ],
    [
      'GET',
      '/v2/attributes',
      undefined,
      '                                    200 200 403 403 403 403 403 401 401',
    ],
    [
      'GET',
      `/v2/attributes/${MISSING}`,
      undefined,
      '                         404 404 403 403 403 403 403 401 401',
    ],
    [
      'POST',
      '/v2/attributes',
      {},
      '                                          400 403 403 403 403 403 403 401 401',
    ],
    [
      'DELETE',
      `/v2/attributes/${MISSING}`,
      undefined,
      '                      404 403 403 403 403 403 403 401 401',
    ],
    [
      'GET',
      '/v1/accelerators',
      undefined,
      '                                  200 200 403 403 403 403 403 401 401',
    ],
    [
      'GET',
      `/v1/accelerators/${MISSING}`,
      undefined,
      '                       404 404 403 403 403 403 403 401 401',
    ],
    [
      'POST',
      '/v1/accelerators',
      {},
      '                                        400 400 403 403 403 403 403 401 401',
    ],
    [
      'PUT',
      `/v1/accelerators/${MISSING}`,
      { hostname: 'node1' },
      '          404 404 403 403 403 403 403 401 401',
    ],
    [
      'DELETE',
      `/v1/accelerators/${MISSING}`,
      undefined,
      '                    404 404 403 403 403 403 403 401 401',
    ],
    [
      'PUT',
      `/v1/accelerators/${MISSING}/acc_specs`,
      { acc_specs: {} },
      '    404 404 403 403 403 403 403 401 401',
    ],
    [
      'POST',
      `/v1/accelerators/${MISSING}/ready`,
      undefined,
      '                404 404 403 403 403 403 403 401 401',
    ],
    [
      'GET',
      '/v1/drivers',
      undefined,
      '                                       200 200 403 403 403 403 403 401 401',
    ],
    [
      'POST',
      '/v1/drivers/nope/install',
      { hostname: 'nowhere' },
      '           404 404 403 403 403 403 403 401 401',
    ],
    [
      'POST',
      '/v1/drivers/nope/uninstall',
      { hostname: 'nowhere' },
      '         404 404 403 403 403 403 403 401 401',
    ],
    [
      'PATCH',
      '/v1/drivers/nope',
      { hostname: 'nowhere', options: { a: 'b' } },
      '404 404 403 403 403 403 403 401 401',
    ],
    [
      'POST',
      '/v1/discovery',
      { hostname: 'nowhere' },
      '                      404 404 403 403 403 403 403 401 401',
    ],
    [
      'GET',
      '/v1/backend_services',
      undefined,
      '                              200 200 403 403 403 403 403 401 401',
    ],
    [
      'GET',
      '/v1/status',
      undefined,
      '                                        200 200 403 403 403 403 403 401 401',
    ],
  ]

  void it('answers every endpoint for every persona with the exact status', async () => {
    const wrong: string[] = []
    const table: string[] = []
    for (const [method, url, body, statuses] of rows()) {
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
      payload: JSON.stringify(unbind()),
    })
    assert.match(unbound.body, /requires a service token/)
  })
})
