/**
 * The login's refusal counter with a clock of its own, which paths need a token, and the session
 * under noauth (the Keystone cases are test/keystone/dashboard-auth.test.ts).
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { isPublicPath, noauthAuthenticator } from '../auth.js'
import { createTestApp, faultOf } from '../../../test/support/api-app.js'
import { createFailureCounter, MAX_FAILURES } from './session.js'

void test('refused logins: the limit per address, for a minute from the oldest', () => {
  let now = 1_000_000
  const counter = createFailureCounter(() => now)
  for (let i = 0; i < MAX_FAILURES; i++) {
    assert.equal(counter.waitSeconds('10.0.0.1'), 0)
    counter.failed('10.0.0.1')
    now += 1_000
  }
  assert.equal(counter.waitSeconds('10.0.0.1'), 50)
  assert.equal(counter.waitSeconds('10.0.0.2'), 0, 'another address is not limited')
  now += 50_000
  assert.equal(counter.waitSeconds('10.0.0.1'), 0, 'the oldest refusal is a minute old')
})

void test('the login is public, the session is not', () => {
  assert.equal(isPublicPath('/dashboard/login'), true)
  for (const p of ['/dashboard/session', '/dashboard/session/', '/dashboard/session?x=1'])
    assert.equal(isPublicPath(p), false, p)
})

void test('under noauth: no login is needed, and the session allows what noauth’s admin may', async () => {
  const t = await createTestApp({ auth: noauthAuthenticator('p-noauth') })
  try {
    const login = await t.app.inject({
      method: 'POST',
      url: '/dashboard/login',
      payload: { username: 'u', password: 'p', project: 'x' },
    })
    assert.equal(login.statusCode, 400)
    assert.match(faultOf(login.body).faultstring, /No login is needed/)
    const big = await t.app.inject({
      method: 'POST',
      url: '/dashboard/login',
      payload: { username: 'u', password: 'p'.repeat(20_000), project: 'x' },
    })
    assert.equal(big.statusCode, 413, 'a body over 16 KiB is refused unread')
    const res = await t.app.inject({ method: 'GET', url: '/dashboard/session' })
    assert.equal(res.statusCode, 200, res.body)
    const body = res.json() as { auth_strategy: string; can: Record<string, boolean> }
    assert.equal(body.auth_strategy, 'noauth')
    assert.equal(body.can['cyborg:device:disable'], true)
    assert.equal(body.can['cyborg:status:get'], true)
  } finally {
    await t.close()
  }
})
