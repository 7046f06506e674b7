/**
 * The outbound Keystone session against a small HTTP server that plays Keystone's token API
 * (`POST /v3/auth/tokens`: 201, X-Subject-Token, token.issued_at/expires_at/catalog; 401 for a bad
 * password), with a clock shared with the session so that renewal is checked without waiting.
 * Cheap and deterministic; test/keystone/outbound-placement.test.ts runs the same client against the
 * real Keystone of test/support/peers/keystone.ts. The stand-ins are in test/support/peers/fake-keystone.ts;
 * keystone-settings.test.ts checks the Nova [service_user] and the option checks.
 */
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { UnavailableError } from '../domain/errors.js'
import {
  endpoints,
  fakeKeystone,
  fakeService,
  HOUR,
} from '../../test/support/peers/fake-keystone.js'
import { OpenStackHttpError, requestJson, type ServiceEndpoint } from './http.js'
import { createKeystoneSession } from './keystone-session.js'
import { createPlacementClient, placementSettings } from './placement.js'
import { sessionAuth } from './service-auth.js'

describe('Keystone session: token cache and renewal', () => {
  it('authenticates once with the password method, scoped to the project, and reuses the token', async () => {
    const ks = await fakeKeystone()
    const session = createKeystoneSession(
      ks.auth({ userDomainName: 'users', projectDomainName: 'Default' }),
    )
    assert.equal(await session.token(), 'tok-1')
    assert.equal(await session.token(), 'tok-1')
    assert.equal(ks.state.issued, 1)
    assert.deepEqual(ks.state.bodies[0], {
      auth: {
        identity: {
          methods: ['password'],
          password: { user: { name: 'cyborg', password: 'secret', domain: { name: 'users' } } },
        },
        scope: { project: { name: 'service', domain: { name: 'Default' } } },
      },
    })
  })

  it('renews a token 5 minutes before expiry, or at 10 % of its life when that is shorter', async () => {
    const ks = await fakeKeystone()
    const session = createKeystoneSession(ks.auth())
    const start = ks.state.clock
    assert.equal(await session.token(), 'tok-1')
    ks.state.clock = start + HOUR - 5 * 60_000 - 1000 // 5 min 1 s left: still used
    assert.equal(await session.token(), 'tok-1')
    ks.state.clock = start + HOUR - 5 * 60_000 + 1000 // 4 min 59 s left: renewed
    assert.equal(await session.token(), 'tok-2')
    assert.equal(ks.state.issued, 2)

    ks.state.lifeMs = 60_000 // a one-minute token: renewed when 6 s are left
    const short = createKeystoneSession(ks.auth())
    const issued = ks.state.clock
    assert.equal(await short.token(), 'tok-3')
    ks.state.clock = issued + 53_000
    assert.equal(await short.token(), 'tok-3')
    ks.state.clock = issued + 55_000
    assert.equal(await short.token(), 'tok-4')
  })

  it('shares one authentication among concurrent callers', async () => {
    const ks = await fakeKeystone([
      { type: 'placement', endpoints: endpoints({ public: 'http://p' }) },
    ])
    const session = createKeystoneSession(ks.auth())
    const answers = await Promise.all([
      session.token(),
      session.token(),
      session.endpoint({ serviceType: 'placement', interfaces: ['public'] }),
      session.token(),
    ])
    assert.deepEqual(answers, ['tok-1', 'tok-1', 'http://p', 'tok-1'])
    assert.equal(ks.state.issued, 1)
    ks.state.clock += HOUR // expired: the next wave shares one renewal too
    assert.deepEqual(await Promise.all([session.token(), session.token(), session.token()]), [
      'tok-2',
      'tok-2',
      'tok-2',
    ])
    assert.equal(ks.state.issued, 2)
  })

  it('adds /v3 to an auth_url without it', async () => {
    const ks = await fakeKeystone()
    const session = createKeystoneSession(ks.auth({ authUrl: ks.url }))
    assert.equal(session.tokenUrl, `${ks.url}/v3/auth/tokens`)
    assert.equal(await session.token(), 'tok-1')
  })
})

describe('Keystone session: failures', () => {
  it('answers UnavailableError naming the URL when Keystone is unreachable', async () => {
    const closed = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const { port } = s.address() as AddressInfo
        s.close(() => resolve(port))
      })
    })
    const session = createKeystoneSession({
      authUrl: `http://127.0.0.1:${closed}/v3`,
      username: 'u',
      password: 'p',
      projectName: 'x',
      timeoutMs: 2000,
    })
    await assert.rejects(session.token(), (err: unknown) => {
      assert.ok(err instanceof UnavailableError)
      assert.equal(err.code, 'KEYSTONE_UNAVAILABLE')
      assert.match(
        err.message,
        new RegExp(`^Keystone POST http://127\\.0\\.0\\.1:${closed}/v3/auth/tokens: ECONNREFUSED$`),
      )
      return true
    })
  })

  it('names the user and project, never the password, when Keystone refuses the credentials', async () => {
    const ks = await fakeKeystone()
    const session = createKeystoneSession(ks.auth({ password: 'wrong-Pa55' }))
    await assert.rejects(session.token(), (err: unknown) => {
      assert.ok(err instanceof UnavailableError)
      assert.equal(err.code, 'KEYSTONE_AUTH_FAILED')
      assert.match(
        err.message,
        /answered 401: Keystone refused user "cyborg" \(domain Default\) for project "service"/,
      )
      assert.doesNotMatch(JSON.stringify({ m: err.message, d: err.details }), /wrong-Pa55/)
      return true
    })
  })
})

describe('Keystone session: a 401 from the service', () => {
  it('drops the token, authenticates again and retries once', async () => {
    const ks = await fakeKeystone()
    const session = createKeystoneSession(ks.auth())
    await session.token() // tok-1 is cached; the service has since stopped accepting it
    const svc = await fakeService((t) => t !== 'tok-1')
    const ep: ServiceEndpoint = {
      service: 'Placement',
      url: svc.url,
      headers: {},
      timeoutMs: 5000,
      auth: sessionAuth({ endpoint: svc.url, session }),
    }
    const answer = await requestJson(ep, 'GET', '/x')
    assert.equal(answer.status, 200)
    assert.deepEqual(svc.tokens(), ['tok-1', 'tok-2'])
    assert.equal(ks.state.issued, 2)
  })

  it('gives up after the one retry when the new token is refused too', async () => {
    const ks = await fakeKeystone()
    const session = createKeystoneSession(ks.auth())
    const svc = await fakeService(() => false)
    const ep: ServiceEndpoint = {
      service: 'Placement',
      url: svc.url,
      headers: {},
      timeoutMs: 5000,
      auth: sessionAuth({ endpoint: svc.url, session }),
    }
    await assert.rejects(
      requestJson(ep, 'GET', '/x'),
      (err: unknown) => err instanceof OpenStackHttpError && err.status === 401,
    )
    assert.deepEqual(svc.tokens(), ['tok-1', 'tok-2'])
  })
})

describe('Keystone session: catalog lookup', () => {
  const catalog = [
    { type: 'identity', endpoints: endpoints({ public: 'http://ks/v3' }) },
    {
      type: 'placement',
      endpoints: endpoints({
        'public@RegionOne': 'http://p1/',
        'internal@RegionOne': 'http://p1-int',
        'public@RegionTwo': 'http://p2',
      }),
    },
    {
      type: 'compute',
      endpoints: [{ interface: 'publicURL', region: 'RegionOne', url: 'http://nova/v2.1' }],
    },
  ]
  it('picks by service type, interface in the order given, and region', async () => {
    const ks = await fakeKeystone(catalog)
    const session = createKeystoneSession(ks.auth())
    const pick = (q: { serviceType: string; interfaces: string[]; region?: string }) =>
      session.endpoint(q)
    assert.equal(await pick({ serviceType: 'placement', interfaces: ['public'] }), 'http://p1')
    assert.equal(
      await pick({ serviceType: 'placement', interfaces: ['internal', 'public'] }),
      'http://p1-int',
    )
    assert.equal(
      await pick({
        serviceType: 'placement',
        interfaces: ['internal', 'public'],
        region: 'RegionTwo',
      }),
      'http://p2',
    )
    assert.equal(await pick({ serviceType: 'compute', interfaces: ['public'] }), 'http://nova/v2.1')
    await assert.rejects(
      pick({ serviceType: 'placement', interfaces: ['admin'], region: 'RegionOne' }),
      (err: unknown) =>
        err instanceof UnavailableError &&
        /no placement endpoint with interface admin in region RegionOne; check valid_interfaces and region_name/.test(
          err.message,
        ),
    )
    await assert.rejects(
      pick({ serviceType: 'image', interfaces: ['public'] }),
      (err: unknown) =>
        err instanceof UnavailableError &&
        /has no service of type image; register one, or set endpoint_override/.test(err.message),
    )
    assert.equal(ks.state.issued, 1)
  })

  it('lets the Placement client of [placement] auth_type = password reach the catalog endpoint with the token', async () => {
    const svc = await fakeService((t) => t === 'tok-1')
    const ks = await fakeKeystone([
      {
        type: 'placement',
        endpoints: endpoints({ 'public@RegionOne': 'http://wrong', 'internal@RegionTwo': svc.url }),
      },
    ])
    const settings = placementSettings({
      auth_type: 'password',
      auth_url: `${ks.url}/v3`,
      username: 'cyborg',
      password: 'secret',
      project_name: 'service',
      valid_interfaces: ['internal'],
      region_name: 'RegionTwo',
      timeout: 5,
    })!
    const client = createPlacementClient(settings)
    assert.equal(client.endpoint, 'the placement endpoint of the Keystone catalog')
    assert.deepEqual(await client.getTraits('1b0e0ad1-0000-4000-8000-000000000001'), ['CUSTOM_A'])
    assert.equal(client.endpoint, svc.url)
    assert.equal(svc.seen[0]!['openstack-api-version'], 'placement 1.39')
    assert.deepEqual(svc.tokens(), ['tok-1'])
  })
})
