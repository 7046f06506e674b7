import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import { Writable } from 'node:stream'
import { describe, it } from 'node:test'
import pino from 'pino'
import { ANONYMOUS_CONTEXT, installAuth, isPublicPath, noauthAuthenticator } from './auth.js'
import { createKeystoneAuthenticator } from './keystone-auth.js'
import { createApp } from './app.js'
import type { ApiDeps } from './types.js'

/** A loopback port nobody listens on. */
async function closedPort(): Promise<number> {
  const srv = createServer()
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  const { port } = srv.address() as { port: number }
  await new Promise((r) => srv.close(r))
  return port
}

void describe('api auth hook', () => {
  void it('knows the paths that need no token', () => {
    for (const p of ['/', '/v1', '/v2', '/v2/', '/healthcheck', '/v2?x=1'])
      assert.equal(isPublicPath(p), true, p)
    for (const p of ['/v2/devices', '/devices', '/v1/accelerators', '/healthcheck/x', '/v3'])
      assert.equal(isPublicPath(p), false, p)
  })

  void it('noauth: every caller is an admin of the configured project', () => {
    const ctx = noauthAuthenticator('proj-1').authenticate(undefined, undefined)
    assert.ok(!(ctx instanceof Promise))
    assert.equal(ctx.projectId, 'proj-1')
    assert.equal(ctx.isAdmin, true)
    assert.ok(Object.isFrozen(ctx))
    assert.equal(ANONYMOUS_CONTEXT.isAdmin, false)
  })

  void it('answers 401 without a token and 503 when Keystone is unreachable, never showing the token', async () => {
    const secret = 'gAAAAA-a-secret-token-value'
    const password = 'a-secret-password'
    const lines: string[] = []
    const log = pino(
      { level: 'trace' },
      new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString()), cb()) }),
    )
    const url = `http://127.0.0.1:${await closedPort()}/v3`
    const auth = createKeystoneAuthenticator({
      authUrl: url,
      timeoutMs: 5_000,
      credentials: {
        username: 'cyborg',
        password,
        projectName: 'service',
        userDomainName: 'Default',
        projectDomainName: 'Default',
      },
      serviceTokenRoles: ['service'],
      serviceTokenRolesRequired: true,
      cacheTimeMs: 300_000,
    })
    // No route reaches the database or the conductor: the hook answers first.
    const app = await createApp({ db: null, conductor: null, log } as unknown as ApiDeps, {})
    installAuth(app, auth)
    app.get('/test/ok', () => ({ ok: true }))
    try {
      const none = await app.inject({ url: '/test/ok' })
      assert.equal(none.statusCode, 401)
      assert.equal(none.headers['www-authenticate'], `Keystone uri="${url}"`)
      const down = await app.inject({
        url: '/test/ok',
        headers: { 'x-auth-token': secret, 'x-service-token': secret },
      })
      assert.equal(down.statusCode, 503)
      assert.match(down.body, /Keystone at http:\/\/127\.0\.0\.1:\d+\/v3 is unavailable/)
      for (const text of [none.body, down.body, ...lines]) {
        assert.ok(!text.includes(secret), 'a token is shown')
        assert.ok(!text.includes(password), 'a password is shown')
      }
      assert.ok(
        lines.some((l) => l.includes('request failed')),
        'the 503 was logged',
      )
    } finally {
      await app.close()
    }
  })
})
