/**
 * `POST /v2/devices/{uuid}/clean` (2.8, docs/cleaning.md): over an app with a recording conductor
 * (the request it passes on, the caller's user and project, the 202 body, a 400 naming the field,
 * 404 for an unknown or malformed uuid, the microversion gate, 403 for anyone but an admin, 503
 * without agents) and `cyborg device clean` against it; then over the in-process stack, where a
 * forced clean puts a failed unit back in service with an override record naming the caller, once
 * the host's agent has confirmed that no clean runs (503 naming the host while it does not).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { Authenticator } from '../../src/api/auth.js'
import { NotAuthenticatedError, NotFoundError, UnavailableError } from '../../src/domain/errors.js'
import { freezeContext } from '../../src/domain/request-context.js'
import type { ConductorRpc, DeviceCleanOutcome } from '../../src/rpc/conductor-rpc.js'
import { createTestApp, faultOf, throwingConductor, type TestApp } from '../support/api-app.js'
import { cyborg } from '../support/cli.js'
import { serveStandInAgent } from '../support/stand-in-agent.js'
import { fault, HOST, serveCleaningAgent, startStack, type Stack } from './stack.js'

const DEVICE = '2d7f8a52-0c5a-4a57-9d56-5f0d2f3a0c11'
const MISSING = '0dd00000-0000-4000-8000-00000000beef'
const NO_AGENTS = '0dd00000-0000-4000-8000-0000000000a9'
const UNITS = ['6b1f0c36-1c4e-4b83-9a0e-6a4b7e0f4d21', '6b1f0c36-1c4e-4b83-9a0e-6a4b7e0f4d22']

type CleanRequest = Parameters<ConductorRpc['cleanDevice']>[0]

/** Tokens named after a persona of project p1 (user `u-<persona>`); the policy alone decides. */
const PERSONAS: Record<string, string[]> = {
  admin: ['admin', 'manager', 'member', 'reader'],
  manager: ['manager', 'member', 'reader'],
  member: ['member', 'reader'],
  reader: ['reader'],
}
const auth: Authenticator = {
  strategy: 'keystone',
  authenticate: (token) => {
    const roles = token === undefined ? undefined : PERSONAS[token]
    if (roles === undefined) throw new NotAuthenticatedError('unknown token')
    return freezeContext({
      userId: `u-${token!}`,
      projectId: 'p1',
      roles,
      isAdmin: roles.includes('admin'),
      systemScope: false,
      serviceRoles: [],
      serviceToken: false,
      authStrategy: 'keystone',
    })
  },
}

void describe('POST /v2/devices/{uuid}/clean, over a recording conductor', () => {
  let t: TestApp
  const asked: CleanRequest[] = []
  const conductor = new Proxy(throwingConductor(), {
    get: (target, method, receiver) =>
      method === 'cleanDevice'
        ? async (req: CleanRequest): Promise<DeviceCleanOutcome> => {
            asked.push(req)
            if (req.uuid === MISSING)
              throw new NotFoundError(`device ${req.uuid} not found`, { code: 'DEVICE_NOT_FOUND' })
            if (req.uuid === NO_AGENTS)
              throw new UnavailableError('this conductor reaches no agents', {
                code: 'NO_AGENT_RPC',
              })
            return { device: req.uuid, units: UNITS, forced: req.force === true }
          }
        : (Reflect.get(target, method, receiver) as unknown),
  })
  before(async () => {
    t = await createTestApp({ auth }, conductor)
  })
  after(() => t.close())

  const clean = (
    uuid: string,
    {
      body,
      version = '2.8',
      token = 'admin',
      prefix = '/v2',
    }: { body?: unknown; version?: string | null; token?: string; prefix?: string } = {},
  ) =>
    t.app.inject({
      method: 'POST',
      url: `${prefix}/devices/${uuid}/clean`,
      headers: {
        host: HOST,
        'x-auth-token': token,
        ...(version === null ? {} : { 'openstack-api-version': `accelerator ${version}` }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    })

  void it('answers 202 with the outcome; no body means no force; the caller is passed on', async () => {
    asked.length = 0
    const res = await clean(DEVICE)
    assert.equal(res.statusCode, 202, res.body)
    assert.deepEqual(res.json(), { device: DEVICE, units: UNITS, forced: false })
    assert.equal(res.headers['openstack-api-version'], 'accelerator 2.8')
    assert.deepEqual(asked, [{ uuid: DEVICE, force: false, userId: 'u-admin', projectId: 'p1' }])
    for (const body of [{}, { force_in_service: false }, null]) {
      const again = await clean(DEVICE, { body })
      assert.equal(again.statusCode, 202, `${JSON.stringify(body)}: ${again.body}`)
      assert.equal(again.json().forced, false)
    }
    assert.ok(asked.every((r) => r.force === false))
  })

  void it('with force_in_service, asks the conductor to force; unprefixed too', async () => {
    asked.length = 0
    const res = await clean(DEVICE, { body: { force_in_service: true }, version: 'latest' })
    assert.equal(res.statusCode, 202, res.body)
    assert.deepEqual(res.json(), { device: DEVICE, units: UNITS, forced: true })
    const bare = await clean(DEVICE, { body: { force_in_service: true }, prefix: '' })
    assert.equal(bare.statusCode, 202, bare.body)
    assert.deepEqual(asked, [
      { uuid: DEVICE, force: true, userId: 'u-admin', projectId: 'p1' },
      { uuid: DEVICE, force: true, userId: 'u-admin', projectId: 'p1' },
    ])
  })

  void it('answers 400 naming the field for a bad body, before the conductor', async () => {
    asked.length = 0
    for (const [body, wanted] of [
      [{ force_in_service: 'yes' }, /field 'force_in_service': must be true or false, got "yes"/],
      [{ force_in_service: 1 }, /field 'force_in_service': must be true or false, got 1/],
      [{ force_in_service: null }, /field 'force_in_service': must be true or false, got null/],
      [{ force: true }, /field 'force': unknown field/],
      [[], /field 'body'/],
      ['yes', /field 'body'/],
    ] as const) {
      const res = await clean(DEVICE, { body })
      assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`)
      assert.match(faultOf(res.body).faultstring, wanted)
    }
    const malformed = await t.app.inject({
      method: 'POST',
      url: `/v2/devices/${DEVICE}/clean`,
      headers: {
        host: HOST,
        'x-auth-token': 'admin',
        'openstack-api-version': 'accelerator 2.8',
        'content-type': 'application/json',
      },
      payload: '{"force_in_service":',
    })
    assert.equal(malformed.statusCode, 400)
    assert.match(faultOf(malformed.body).faultstring, /Malformed JSON/)
    assert.deepEqual(asked, [])
  })

  void it('answers 404 for an unknown device, and for a malformed uuid without asking', async () => {
    asked.length = 0
    const unknown = await clean(MISSING)
    assert.equal(unknown.statusCode, 404)
    assert.match(faultOf(unknown.body).faultstring, new RegExp(`device ${MISSING} not found`))
    const malformed = await clean('not-a-uuid', { body: { force_in_service: true } })
    assert.equal(malformed.statusCode, 404)
    assert.match(faultOf(malformed.body).faultstring, /device not-a-uuid not found/)
    assert.deepEqual(
      asked.map((r) => r.uuid),
      [MISSING],
    )
  })

  void it('is a 404 naming microversion 2.8 below it, body unread', async () => {
    asked.length = 0
    for (const version of ['2.7', '2.0', null]) {
      const res = await clean(DEVICE, { version, body: { force_in_service: 'yes' } })
      assert.equal(res.statusCode, 404, `${String(version)}: ${res.body}`)
      assert.match(faultOf(res.body).faultstring, /needs microversion 2\.8/)
    }
    const unsupported = await clean(DEVICE, { version: '2.99' })
    assert.equal(unsupported.statusCode, 406)
    assert.deepEqual(asked, [])
  })

  void it('is for admins only: 403 naming the rule for anyone else, 401 without a token', async () => {
    asked.length = 0
    for (const token of ['manager', 'member', 'reader']) {
      const res = await clean(DEVICE, { token, body: { force_in_service: true } })
      assert.equal(res.statusCode, 403, `${token}: ${res.body}`)
      assert.match(
        faultOf(res.body).faultstring,
        /Policy doesn't allow cyborg:device:clean to be performed/,
      )
    }
    assert.equal((await clean(DEVICE, { token: 'nobody' })).statusCode, 401)
    assert.deepEqual(asked, [])
  })

  void it('answers 503 when the conductor reaches no agents, 405 for another method', async () => {
    const res = await clean(NO_AGENTS)
    assert.equal(res.statusCode, 503, res.body)
    assert.match(faultOf(res.body).faultstring, /reaches no agents/)
    const get = await t.app.inject({
      method: 'GET',
      url: `/v2/devices/${DEVICE}/clean`,
      headers: { host: HOST, 'x-auth-token': 'admin', 'openstack-api-version': 'accelerator 2.8' },
    })
    assert.equal(get.statusCode, 405)
    assert.equal(get.headers.allow, 'POST')
  })

  void it('is documented: the body schema and the 202 answer', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: '/v2/openapi.json',
      headers: { host: HOST },
    })
    const op = (
      res.json() as {
        paths: Record<
          string,
          { post?: { requestBody?: unknown; responses: Record<string, unknown> } }
        >
      }
    ).paths['/v2/devices/{uuid}/clean']?.post
    assert.ok(op, 'POST /v2/devices/{uuid}/clean documented')
    assert.match(JSON.stringify(op.requestBody), /force_in_service/)
    assert.deepEqual(Object.keys(op.responses).sort(), [
      '202',
      '400',
      '401',
      '403',
      '404',
      '406',
      '409',
      '413',
      '415',
      '503',
    ])
    assert.match(JSON.stringify(op.responses['202']), /"units"/)
  })

  void it('cyborg device clean [--force-in-service] sends 2.8 and prints a line, or the JSON', async () => {
    const url = await t.app.listen({ host: '127.0.0.1', port: 0 })
    asked.length = 0
    const env = { CYBORG_URL: url, OS_TOKEN: 'admin' }
    const plain = await cyborg(['device', 'clean', DEVICE], env)
    assert.equal(plain.code, 0, plain.stderr)
    assert.equal(
      plain.stdout,
      `device ${DEVICE}: 2 units asked to clean again (see cyborg custody list --device ${DEVICE} --kind clean): ${UNITS.join(', ')}\n`,
    )
    const forced = await cyborg(
      ['device', 'clean', DEVICE, '--force-in-service', '--format', 'json'],
      env,
    )
    assert.equal(forced.code, 0, forced.stderr)
    assert.deepEqual(JSON.parse(forced.stdout), { device: DEVICE, units: UNITS, forced: true })
    assert.deepEqual(
      asked.map((r) => r.force),
      [false, true],
    )
    const denied = await cyborg(['device', 'clean', DEVICE], { ...env, OS_TOKEN: 'member' })
    assert.equal(denied.code, 1)
    assert.match(
      denied.stderr,
      /^cyborg device clean: POST \/v2\/devices\/\S+\/clean: HTTP 403: Policy doesn't allow cyborg:device:clean to be performed.*\n$/,
    )
  })
})

void describe('POST /v2/devices/{uuid}/clean, over the in-process stack', () => {
  let s: Stack
  before(async () => {
    s = await startStack({ auth })
  })
  after(() => s.close())

  const clean = (uuid: string, body?: unknown) =>
    s.request({
      method: 'POST',
      url: `/v2/devices/${uuid}/clean`,
      version: '2.8',
      headers: {
        'x-auth-token': 'admin',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    })

  void it('nothing to clean: 202 with no unit; an unknown device: 404', async () => {
    const device = await s.db.db
      .selectFrom('devices')
      .select('uuid')
      .where('hostname', '=', 'node2')
      .orderBy('id')
      .executeTakeFirstOrThrow()
    const res = await clean(device.uuid)
    assert.equal(res.statusCode, 202, res.body)
    assert.deepEqual(res.json(), { device: device.uuid, units: [], forced: false })
    const unknown = await clean(MISSING, { force_in_service: true })
    assert.equal(unknown.statusCode, 404, unknown.body)
    assert.match(fault(unknown), new RegExp(`device ${MISSING} not found`))
  })

  void it('force_in_service puts a failed unit back, recorded as an override by the caller', async () => {
    const handle = await s.db.db
      .selectFrom('attach_handles as h')
      .innerJoin('deployables as d', 'd.id', 'h.deployable_id')
      .innerJoin('devices as dev', 'dev.id', 'd.device_id')
      .select(['h.id', 'h.uuid', 'dev.uuid as device'])
      .where('dev.hostname', '=', 'node2')
      .orderBy('h.id', 'desc')
      .executeTakeFirstOrThrow()
    await s.db.db
      .updateTable('attach_handles')
      .set({ in_use: 1, clean_state: 'failed', clean_since: '2026-11-26T06:00:00.000000+00:00' })
      .where('id', '=', handle.id)
      .execute()
    // node2's agent does not answer the abort: the unit stays out, the operator reads which host.
    const silent = await serveStandInAgent(s.bus, 'node2', {
      abortClean: () =>
        Promise.reject(
          new UnavailableError('no reply to cyborg.agent.node2.abortClean within 15000 ms', {
            code: 'RPC_TIMEOUT',
          }),
        ),
    })
    const refused = await clean(handle.device, { force_in_service: true })
    assert.equal(refused.statusCode, 503, refused.body)
    assert.match(
      fault(refused),
      new RegExp(
        `^the agent on host node2 did not confirm that no clean runs on unit\\(s\\) ` +
          `${handle.uuid} .*: they stay out of service; start the agent on node2 and run the ` +
          `command again$`,
      ),
    )
    const still = await s.db.db
      .selectFrom('attach_handles')
      .select('clean_state')
      .where('id', '=', handle.id)
      .executeTakeFirstOrThrow()
    assert.equal(still.clean_state, 'failed')
    await silent.unsubscribe()

    await serveCleaningAgent(s, 'node2')
    const res = await clean(handle.device, { force_in_service: true })
    assert.equal(res.statusCode, 202, res.body)
    assert.deepEqual(res.json(), { device: handle.device, units: [handle.uuid], forced: true })
    const after = await s.db.db
      .selectFrom('attach_handles')
      .select(['in_use', 'clean_state'])
      .where('id', '=', handle.id)
      .executeTakeFirstOrThrow()
    assert.deepEqual({ ...after, in_use: Number(after.in_use) }, { in_use: 0, clean_state: null })
    const records = await s.db.db
      .selectFrom('custody_records')
      .select(['kind', 'handle_uuid', 'user_id', 'project_id', 'detail'])
      .where('handle_uuid', '=', handle.uuid)
      .execute()
    // project_id is the tenant's (the interval's; none here); the operator's is in detail.
    assert.deepEqual(records, [
      {
        kind: 'override',
        handle_uuid: handle.uuid,
        user_id: 'u-admin',
        project_id: null,
        detail: JSON.stringify({
          reason: 'force-in-service',
          by_project_id: 'p1',
          clean_aborted: false,
        }),
      },
    ])
  })
})
