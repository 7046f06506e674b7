/**
 * Settings of the Keystone-authenticated clients: Nova's [service_user] token sent next to the
 * admin token (against the stand-ins of test/support/peers/fake-keystone.ts), and keystoneSettings'
 * refusal of options that cannot work.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ConfigError } from '../domain/errors.js'
import { fakeKeystone, fakeService } from '../../test/support/peers/fake-keystone.js'
import { createNovaClient, novaSettings } from './nova.js'
import { keystoneSettings } from './service-auth.js'

describe('Nova with [service_user]', () => {
  it("sends the service user's token as X-Service-Token next to the static admin token", async () => {
    const ks = await fakeKeystone()
    const nova = await fakeService()
    const settings = novaSettings(
      {
        auth_type: 'admin_token',
        endpoint_override: `${nova.url}/v2.1`,
        token: 'admin',
        service_token: 'static',
      },
      {
        send_service_user_token: true,
        auth_type: 'password',
        auth_url: `${ks.url}/v3`,
        username: 'nova-svc',
        password: 'secret',
        project_name: 'service',
      },
    )!
    await createNovaClient({ ...settings, backoffMs: [] }).sendArqBoundEvents([
      {
        instanceUuid: '6f1b2a52-7d1e-4c55-9a0b-5a3c2c6d2f11',
        arqUuid: 'a1d3b7c0-0000-4000-8000-000000000001',
        status: 'completed',
      },
    ])
    assert.equal(nova.seen[0]!['x-auth-token'], 'admin')
    assert.equal(nova.seen[0]!['x-service-token'], 'tok-1')
  })

  it('refuses a service user without a password method or a username, naming the option', () => {
    const nova = {
      auth_type: 'admin_token' as const,
      endpoint_override: 'http://nova/v2.1',
      token: 'admin',
    }
    assert.throws(
      () => novaSettings(nova, { send_service_user_token: true, auth_type: 'none' }),
      (err: unknown) =>
        err instanceof ConfigError &&
        /^\[service_user\] auth_type must be password/.test(err.message),
    )
    assert.throws(
      () =>
        novaSettings(nova, {
          send_service_user_token: true,
          auth_type: 'password',
          auth_url: 'http://ks/v3',
          password: 'p',
          project_name: 's',
        }),
      (err: unknown) =>
        err instanceof ConfigError &&
        err.message === '[service_user] username is required when auth_type = password',
    )
    assert.equal(
      novaSettings(nova, { send_service_user_token: false, auth_type: 'none' })?.auth,
      undefined,
    )
  })
})

describe('keystoneSettings', () => {
  const password = {
    auth_type: 'password' as const,
    auth_url: 'http://ks/v3',
    username: 'u',
    password: 'p',
    project_name: 's',
    timeout: 5,
  }
  it('refuses what cannot work, naming the option', () => {
    const refused = (opts: Parameters<typeof keystoneSettings>[1], message: RegExp) =>
      assert.throws(
        () => keystoneSettings('placement', opts),
        (err: unknown) => err instanceof ConfigError && message.test(err.message),
      )
    refused(
      { ...password, project_name: undefined },
      /^\[placement\] project_name is required when auth_type = password$/,
    )
    refused(
      { ...password, valid_interfaces: ['private'] },
      /^\[placement\] valid_interfaces has "private": expected public, internal or admin$/,
    )
    refused(
      { auth_type: 'admin_token', token: 't', timeout: 5 },
      /^\[placement\] endpoint_override is required when auth_type = admin_token/,
    )
  })
  it('uses endpoint_override with password auth when it is set', () => {
    const s = keystoneSettings('placement', { ...password, endpoint_override: 'http://p:8778' })!
    assert.equal(s.endpoint, 'http://p:8778')
    assert.ok(s.auth)
    assert.equal(s.token, undefined)
  })
})
