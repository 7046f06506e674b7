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
 * request shows isolation: another project's caller gets 404, not 403. The table is in
 * test/support/rbac-matrix.ts.
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
import { PERSONAS, rbacRows, unbind, type Who } from '../support/rbac-matrix.js'

const skip = await keystoneSkip()

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
