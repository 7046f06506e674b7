/**
 * Inbound Keystone authentication against a real Keystone (scripts/keystone.sh): 401 with
 * WWW-Authenticate for a missing, garbage or revoked token, the caller's context as Keystone
 * says, one validation call per token within its cache window, revocation within
 * token_cache_time, service tokens and their roles, 503 when Keystone is down, and no token in
 * any log line or error body.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Writable } from 'node:stream'
import pino from 'pino'
import type { FastifyInstance } from 'fastify'
import { createApp } from '../../src/api/app.js'
import {
  createKeystoneAuthenticator,
  type KeystoneAuthOptions,
} from '../../src/api/keystone-auth.js'
import type { RequestContext } from '../../src/domain/request-context.js'
import { loadConfig } from '../../src/config/config.js'
import { apiAuthenticator } from '../../src/main/api-auth.js'
import { fault, HOST, startStack, type Stack } from '../api/stack.js'
import {
  apiAuthOptions,
  createPersonas,
  keystoneSkip,
  startKeystone,
  type Personas,
  type RunningKeystone,
} from '../support/peers/keystone.js'

const skip = await keystoneSkip()

void describe('inbound Keystone auth', { skip }, () => {
  let ks: RunningKeystone
  let people: Personas
  let stack: Stack
  const logLines: string[] = []
  const calls: string[] = []

  const options = (more: Partial<KeystoneAuthOptions> = {}): KeystoneAuthOptions => ({
    ...apiAuthOptions(ks, people),
    onCall: (method, path, status) => calls.push(`${method} ${path} ${status}`),
    ...more,
  })

  /** An app on the stack's database and conductor with `auth`, plus GET /test/whoami → request.ctx. */
  const appWith = async (more: Partial<KeystoneAuthOptions> = {}) => {
    const auth = createKeystoneAuthenticator(options(more))
    const log = pino(
      { level: 'debug' },
      new Writable({ write: (chunk: Buffer, _e, cb) => (logLines.push(chunk.toString()), cb()) }),
    )
    const app = await createApp(
      { db: stack.db.db, conductor: stack.core.conductorClient, log },
      { auth },
    )
    app.get('/test/whoami', (request) => request.ctx)
    return { app, auth }
  }
  const get = (app: FastifyInstance, url: string, headers: Record<string, string> = {}) =>
    app.inject({ method: 'GET', url, headers: { host: HOST, ...headers } })
  const whoami = async (app: FastifyInstance, headers: Record<string, string>) => {
    const res = await get(app, '/test/whoami', headers)
    assert.equal(res.statusCode, 200, res.body)
    return res.json() as RequestContext
  }

  let main: { app: FastifyInstance; auth: ReturnType<typeof createKeystoneAuthenticator> }
  const tokens: string[] = []
  const token = async (p: Parameters<Personas['token']>[0]) => {
    const t = await people.token(p)
    tokens.push(t)
    return t
  }

  before(async () => {
    ks = await startKeystone()
    people = await createPersonas(ks)
    stack = await startStack()
    main = await appWith()
  })
  after(async () => {
    await main?.app.close()
    await stack?.close()
    await ks?.stop()
  })

  void it('serves /, /v1, /v2 and /healthcheck without a token', async () => {
    for (const url of ['/', '/v1', '/v2', '/v2/', '/healthcheck']) {
      assert.equal((await get(main.app, url)).statusCode, 200, url)
    }
  })

  void it('answers 401 with WWW-Authenticate for no token and for a garbage one', async () => {
    const none = await get(main.app, '/v2/device_profiles')
    assert.equal(none.statusCode, 401)
    assert.equal(none.headers['www-authenticate'], `Keystone uri="${ks.url}"`)
    assert.match(fault(none), /X-Auth-Token/)
    const garbage = await get(main.app, '/v2/device_profiles', {
      'x-auth-token': 'gAAAAAnot-a-token',
    })
    assert.equal(garbage.statusCode, 401)
    assert.equal(garbage.headers['www-authenticate'], `Keystone uri="${ks.url}"`)
    assert.match(fault(garbage), /invalid, expired or revoked/)
    // A path that does not exist still needs a token first.
    assert.equal((await get(main.app, '/v2/nothing-here')).statusCode, 401)
  })

  void it('lets a valid token through with the roles and project Keystone gives it', async () => {
    const t = await token('member')
    assert.equal(
      (await get(main.app, '/v2/device_profiles', { 'x-auth-token': t })).statusCode,
      200,
    )
    const ctx = await whoami(main.app, { 'x-auth-token': t })
    assert.equal(ctx.userId, people.users.member)
    assert.equal(ctx.projectId, people.projects.main)
    assert.deepEqual([...ctx.roles].sort(), ['member', 'reader'])
    assert.equal(ctx.isAdmin, false)
    assert.equal(ctx.serviceToken, false)
    assert.equal(ctx.authStrategy, 'keystone')
    const admin = await whoami(main.app, { 'x-auth-token': await token('admin') })
    assert.equal(admin.isAdmin, true)
    assert.equal(admin.projectId, people.projects.main)
    const other = await whoami(main.app, { 'x-auth-token': await token('other') })
    assert.equal(other.projectId, people.projects.other)
  })

  void it('asks Keystone once per token within its cache window, also for concurrent first requests', async () => {
    const t = await token('reader')
    const before = main.auth.validations
    const validateCalls = () => calls.filter((c) => c.startsWith('GET /auth/tokens')).length
    const callsBefore = validateCalls()
    const first = await Promise.all(
      Array.from({ length: 5 }, () => get(main.app, '/v2/device_profiles', { 'x-auth-token': t })),
    )
    for (let i = 0; i < 5; i++)
      assert.equal(
        (await get(main.app, '/v2/device_profiles', { 'x-auth-token': t })).statusCode,
        200,
      )
    assert.deepEqual(
      first.map((r) => r.statusCode),
      [200, 200, 200, 200, 200],
    )
    assert.equal(main.auth.validations - before, 1)
    assert.equal(validateCalls() - callsBefore, 1)
  })

  void it('refuses a revoked token at once with token_cache_time = 0, and after the window otherwise', async () => {
    const uncached = await appWith({ cacheTimeMs: 0 })
    const shortCache = await appWith({ cacheTimeMs: 1_000 })
    try {
      const t = await token('member')
      assert.equal(
        (await get(uncached.app, '/v2/device_profiles', { 'x-auth-token': t })).statusCode,
        200,
      )
      assert.equal(
        (await get(shortCache.app, '/v2/device_profiles', { 'x-auth-token': t })).statusCode,
        200,
      )
      await ks.revokeToken(t)
      const now = await get(uncached.app, '/v2/device_profiles', { 'x-auth-token': t })
      assert.equal(now.statusCode, 401)
      await new Promise((r) => setTimeout(r, 1_100))
      assert.equal(
        (await get(shortCache.app, '/v2/device_profiles', { 'x-auth-token': t })).statusCode,
        401,
      )
    } finally {
      await uncached.app.close()
      await shortCache.app.close()
    }
  })

  void it('accepts X-Service-Token as a service token only with a service role (when required)', async () => {
    const user = await token('member')
    const service = await token('service')
    const withService = await whoami(main.app, { 'x-auth-token': user, 'x-service-token': service })
    assert.equal(withService.serviceToken, true)
    assert.deepEqual(withService.serviceRoles, ['service'])
    assert.equal(withService.userId, people.users.member)
    assert.equal(withService.projectId, people.projects.main)

    const memberAsService = await whoami(main.app, {
      'x-auth-token': user,
      'x-service-token': await token('reader'),
    })
    assert.equal(memberAsService.serviceToken, false)
    assert.deepEqual(memberAsService.serviceRoles, ['reader'])

    const lax = await appWith({ serviceTokenRolesRequired: false })
    try {
      assert.equal(
        (await whoami(lax.app, { 'x-auth-token': user, 'x-service-token': await token('reader') }))
          .serviceToken,
        true,
      )
    } finally {
      await lax.app.close()
    }
    const bad = await get(main.app, '/v2/device_profiles', {
      'x-auth-token': user,
      'x-service-token': 'garbage-service-token',
    })
    assert.equal(bad.statusCode, 401)
    assert.match(fault(bad), /X-Service-Token/)
  })

  void it('answers 503 naming the problem when the API’s own credentials are refused', async () => {
    const wrong = await appWith({
      credentials: {
        ...people.apiUser,
        password: 'not-the-password',
        userDomainName: 'Default',
        projectDomainName: 'Default',
      },
    })
    try {
      const res = await get(wrong.app, '/v2/device_profiles', {
        'x-auth-token': await token('member'),
      })
      assert.equal(res.statusCode, 503)
      assert.match(fault(res), /keystone_authtoken/)
    } finally {
      await wrong.app.close()
    }
  })

  void it('builds the authenticator from [api] auth_strategy and [keystone_authtoken]', async () => {
    const config = loadConfig({
      files: [],
      env: {
        CYBORG_API__AUTH_STRATEGY: 'keystone',
        CYBORG_KEYSTONE_AUTHTOKEN__AUTH_URL: ks.url,
        CYBORG_KEYSTONE_AUTHTOKEN__USERNAME: people.apiUser.username,
        CYBORG_KEYSTONE_AUTHTOKEN__PASSWORD: people.apiUser.password,
        CYBORG_KEYSTONE_AUTHTOKEN__PROJECT_NAME: people.apiUser.projectName,
      },
    })
    const auth = apiAuthenticator(config, pino({ level: 'silent' }))
    assert.equal(auth.strategy, 'keystone')
    const ctx = await auth.authenticate(await token('manager'), undefined)
    assert.equal(ctx.userId, people.users.manager)
    assert.ok(ctx.roles.includes('manager'))
    const missing = loadConfig({ files: [], env: { CYBORG_API__AUTH_STRATEGY: 'keystone' } })
    assert.throws(() => apiAuthenticator(missing, pino({ level: 'silent' })), /auth_url/)
  })

  void it('answers 503 when Keystone is down, still serves cached tokens, and never shows a token', async () => {
    const cached = await token('admin')
    assert.equal(
      (await get(main.app, '/v2/device_profiles', { 'x-auth-token': cached })).statusCode,
      200,
    )
    const fresh = await token('member')
    await ks.halt()
    const bodies: string[] = []
    const down = await get(main.app, '/v2/device_profiles', { 'x-auth-token': fresh })
    bodies.push(down.body)
    assert.equal(down.statusCode, 503)
    assert.match(fault(down), /Keystone at http:\/\/127\.0\.0\.1:\d+\/v3 is unavailable/)
    assert.equal(
      (await get(main.app, '/v2/device_profiles', { 'x-auth-token': cached })).statusCode,
      200,
    )
    bodies.push(
      (await get(main.app, '/v2/device_profiles', { 'x-auth-token': 'garbage-token-xyz' })).body,
    )
    assert.ok(tokens.length >= 8)
    for (const t of [...tokens, 'garbage-token-xyz', 'garbage-service-token', 'not-the-password']) {
      for (const b of bodies) assert.ok(!b.includes(t), 'an error body shows a token')
      for (const line of logLines)
        assert.ok(!line.includes(t), `a log line shows a token or password: ${line.slice(0, 200)}`)
    }
    assert.ok(logLines.length > 0, 'the debug log was written')
  })
})
