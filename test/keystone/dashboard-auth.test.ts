/**
 * The dashboard's login and session (src/api/dashboard/session.ts) over HTTP against a real
 * Keystone: a login answers a token that works on the API, a refused one is a 401 that does not
 * say which part was wrong, a missing field is a 400 naming it, the session's `can` follows the
 * policy for an admin and a reader (whose disable the API refuses anyway), refused logins are
 * limited per address, and neither a password nor a token reaches the logs.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Writable } from 'node:stream'
import pino from 'pino'
import type { FastifyInstance } from 'fastify'
import { createApp } from '../../src/api/app.js'
import { createKeystoneAuthenticator } from '../../src/api/keystone-auth.js'
import { noauthAuthenticator } from '../../src/api/auth.js'
import { MAX_FAILURES } from '../../src/api/dashboard/session.js'
import { fault, HOST, startStack, type Stack } from '../api/stack.js'
import {
  apiAuthOptions,
  createPersonas,
  keystoneSkip,
  startKeystone,
  USER_PASSWORD,
  type Personas,
  type RunningKeystone,
} from '../support/peers/keystone.js'

const skip = await keystoneSkip()
const V26 = { 'openstack-api-version': 'accelerator 2.6' }

interface Session {
  auth_strategy: string
  user: { id: string | null; name: string | null }
  project: { id: string | null; name: string | null }
  roles: string[]
  can: Record<string, boolean>
}

void describe('the dashboard’s login and session against Keystone', { skip }, () => {
  let ks: RunningKeystone
  let people: Personas
  let stack: Stack
  let app: FastifyInstance
  const logLines: string[] = []
  const tokens: string[] = []

  const appWith = async () => {
    const log = pino(
      { level: 'trace' },
      new Writable({ write: (chunk: Buffer, _e, cb) => (logLines.push(chunk.toString()), cb()) }),
    )
    return createApp(
      { db: stack.db.db, conductor: stack.core.conductorClient, log },
      { auth: createKeystoneAuthenticator(apiAuthOptions(ks, people)) },
    )
  }
  const login = (a: FastifyInstance, body: Record<string, unknown>) =>
    a.inject({ method: 'POST', url: '/dashboard/login', headers: { host: HOST }, payload: body })
  const as = (persona: 'admin' | 'reader', password = USER_PASSWORD) => ({
    username: `d-${persona}`,
    password,
    project: people.projectNames.main,
  })
  const loggedIn = async (persona: 'admin' | 'reader') => {
    const res = await login(app, as(persona))
    assert.equal(res.statusCode, 200, res.body)
    const token = (res.json() as { token: string }).token
    tokens.push(token)
    return token
  }
  const session = async (token: string) => {
    const res = await app.inject({
      method: 'GET',
      url: '/dashboard/session',
      headers: { host: HOST, 'x-auth-token': token },
    })
    assert.equal(res.statusCode, 200, res.body)
    assert.ok(!res.body.includes(token), 'the session echoes the token')
    return res.json() as Session
  }

  before(async () => {
    ks = await startKeystone()
    people = await createPersonas(ks, 'd')
    stack = await startStack()
    app = await appWith()
  })
  after(async () => {
    await app?.close()
    await stack?.close()
    await ks?.stop()
  })

  void it('logs in: a token in the body (no cookie), that works on the API', async () => {
    const res = await login(app, { ...as('admin'), user_domain: 'Default' })
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.headers['set-cookie'], undefined)
    assert.equal(res.headers['cache-control'], 'no-store')
    const body = res.json() as {
      token: string
      expires_at: string
      user: { id: string; name: string }
      project: { id: string; name: string }
      roles: string[]
    }
    tokens.push(body.token)
    assert.equal(body.user.id, people.users.admin)
    assert.equal(body.user.name, 'd-admin')
    assert.deepEqual(body.project, { id: people.projects.main, name: people.projectNames.main })
    assert.ok(body.roles.includes('admin'))
    assert.ok(Date.parse(body.expires_at) > Date.now())
    const devices = await app.inject({
      method: 'GET',
      url: '/v2/devices',
      headers: { host: HOST, 'x-auth-token': body.token, ...V26 },
    })
    assert.equal(devices.statusCode, 200, devices.body)
  })

  void it('answers 401 for a wrong password or project without saying which', async () => {
    const wrongPassword = await login(app, as('reader', 'not-the-password'))
    assert.equal(wrongPassword.statusCode, 401, wrongPassword.body)
    assert.match(fault(wrongPassword), /the user name, password or project is wrong/)
    const wrongProject = await login(app, { ...as('reader'), project: 'no-such-project' })
    assert.equal(wrongProject.statusCode, 401)
    assert.equal(fault(wrongProject), fault(wrongPassword))
    assert.ok(!wrongPassword.body.includes('not-the-password'))
  })

  void it('answers 400 naming a missing or unknown field', async () => {
    const { project: _, ...noProject } = as('reader')
    const res = await login(app, noProject)
    assert.equal(res.statusCode, 400)
    assert.match(fault(res), /project/)
    const extra = await login(app, { ...as('reader'), scope: 'system' })
    assert.equal(extra.statusCode, 400)
    assert.match(fault(extra), /scope/)
  })

  void it('tells an admin and a reader what the policy lets each do; the API refuses a reader anyway', async () => {
    const admin = await session(await loggedIn('admin'))
    assert.equal(admin.auth_strategy, 'keystone')
    assert.equal(admin.user.id, people.users.admin)
    assert.equal(admin.user.name, 'd-admin')
    assert.equal(admin.project.name, people.projectNames.main)
    for (const rule of ['disable', 'enable', 'ready', 'clean', 'get_all'])
      assert.equal(admin.can[`cyborg:device:${rule}`], true, rule)
    assert.equal(admin.can['cyborg:status:get'], true)
    const readerToken = await loggedIn('reader')
    const reader = await session(readerToken)
    assert.equal(reader.user.id, people.users.reader)
    assert.deepEqual(reader.roles, ['reader'])
    for (const rule of ['disable', 'enable', 'ready', 'clean', 'get_all'])
      assert.equal(reader.can[`cyborg:device:${rule}`], false, rule)
    assert.equal(reader.can['cyborg:status:get'], false)
    assert.equal(reader.can['cyborg:arq:get_all'], true)
    assert.equal(reader.can['cyborg:custody:get_all'], true)
    assert.equal(reader.can['cyborg:device_profile:explain'], true)
    // A rule this API does not know (yet) is answered false, not a 500.
    assert.equal(typeof reader.can['cyborg:event:get_all'], 'boolean')

    const listed = await app.inject({
      method: 'GET',
      url: '/v2/devices',
      headers: { host: HOST, 'x-auth-token': tokens[0]!, ...V26 },
    })
    const uuid = (listed.json() as { devices: { uuid: string }[] }).devices[0]!.uuid
    const disable = await app.inject({
      method: 'POST',
      url: `/v2/devices/${uuid}/disable`,
      headers: { host: HOST, 'x-auth-token': readerToken, ...V26 },
    })
    assert.equal(disable.statusCode, 403, disable.body)
    assert.match(fault(disable), /cyborg:device:disable/)
  })

  void it('needs a token for the session', async () => {
    const res = await app.inject({
      method: 'GET',
      url: '/dashboard/session',
      headers: { host: HOST },
    })
    assert.equal(res.statusCode, 401)
  })

  void it('limits refused logins per address, then answers 429 with Retry-After', async () => {
    const limited = await appWith()
    try {
      for (let i = 0; i < MAX_FAILURES; i++)
        assert.equal((await login(limited, as('reader', `wrong-${i}`))).statusCode, 401)
      const res = await login(limited, as('reader'))
      assert.equal(res.statusCode, 429, res.body)
      assert.ok(Number(res.headers['retry-after']) > 0)
      assert.match(fault(res), /Too many refused logins/)
    } finally {
      await limited.close()
    }
  })

  void it('answers 503 naming Keystone when it cannot be reached', async () => {
    const down = await createApp(
      { db: stack.db.db, conductor: stack.core.conductorClient, log: pino({ level: 'silent' }) },
      {
        auth: createKeystoneAuthenticator({
          ...apiAuthOptions(ks, people),
          authUrl: 'http://127.0.0.1:9/v3',
          timeoutMs: 2_000,
        }),
      },
    )
    try {
      const res = await login(down, as('reader'))
      assert.equal(res.statusCode, 503, res.body)
      assert.match(fault(res), /Keystone at http:\/\/127\.0\.0\.1:9\/v3/)
      assert.ok(!res.body.includes(USER_PASSWORD))
    } finally {
      await down.close()
    }
  })

  void it('says no login is needed under noauth', async () => {
    const noauth = await createApp(
      { db: stack.db.db, conductor: stack.core.conductorClient, log: pino({ level: 'silent' }) },
      { auth: noauthAuthenticator('p-noauth') },
    )
    try {
      const res = await login(noauth, as('reader'))
      assert.equal(res.statusCode, 400)
      assert.match(fault(res), /No login is needed.*noauth/)
      const s = await noauth.inject({
        method: 'GET',
        url: '/dashboard/session',
        headers: { host: HOST },
      })
      assert.equal(s.statusCode, 200)
      const body = s.json() as Session
      assert.equal(body.auth_strategy, 'noauth')
      assert.equal(body.can['cyborg:device:disable'], true)
    } finally {
      await noauth.close()
    }
  })

  void it('writes neither a password nor a token to the logs', () => {
    assert.ok(logLines.length > 0, 'the app logged at trace level')
    const all = logLines.join('')
    assert.ok(!all.includes(USER_PASSWORD), 'a password is in the logs')
    assert.ok(!all.includes('not-the-password'), 'a wrong password is in the logs')
    for (const t of tokens) assert.ok(!all.includes(t), 'a token is in the logs')
  })
})
