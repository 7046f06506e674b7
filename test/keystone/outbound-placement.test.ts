/**
 * Outbound auth against a real Keystone (scripts/keystone.sh) and a real Placement
 * (scripts/placement.sh): `[placement] auth_type = password` without endpoint_override, so the
 * conductor's Placement client finds Placement in the Keystone catalog and sends a real token.
 *
 * Placement runs with noauth2 in the tests, so it would take any token; the part that
 * keystonemiddleware plays in production (validate X-Auth-Token with Keystone, refuse it with 401
 * otherwise) is played by a small proxy in front of it that asks the real Keystone
 * (`GET /v3/auth/tokens`) about every token it gets.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { loadConfig } from '../../src/config/config.js'
import { placementOptions } from '../../src/main/resources.js'
import {
  keystoneSkip,
  startKeystone,
  USER_PASSWORD,
  type RunningKeystone,
} from '../support/peers/keystone.js'
import { placementSkip, startPlacement, type RunningPlacement } from '../support/peers/placement.js'

const skip = (await keystoneSkip()) ?? (await placementSkip())

/** What the proxy saw: the token of each request and who Keystone said it belonged to. */
interface Seen {
  token: string
  /** `user@project`, or `invalid (404)` when Keystone did not accept the token. */
  who: string
}

/** keystonemiddleware's part: validate the token with Keystone, then forward with Placement's noauth2 admin token. */
async function validatingProxy(ks: RunningKeystone, placementUrl: string) {
  const seen: Seen[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      void (async () => {
        const token = String(req.headers['x-auth-token'] ?? '')
        const check = await fetch(`${ks.url}/auth/tokens`, {
          headers: { 'x-auth-token': await ks.adminToken(), 'x-subject-token': token },
        })
        if (!check.ok) {
          await check.body?.cancel()
          seen.push({ token, who: `invalid (${check.status})` })
          return void res.writeHead(401, { 'www-authenticate': `Keystone uri="${ks.url}"` }).end()
        }
        const info = (await check.json()) as {
          token: { user: { name: string }; project: { name: string } }
        }
        seen.push({ token, who: `${info.token.user.name}@${info.token.project.name}` })
        const answer = await fetch(placementUrl + req.url!, {
          method: req.method!,
          headers: {
            'x-auth-token': 'admin',
            'openstack-api-version': String(req.headers['openstack-api-version'] ?? ''),
            ...(req.headers['content-type'] ? { 'content-type': req.headers['content-type'] } : {}),
          },
          body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
        })
        const body = Buffer.from(await answer.arrayBuffer())
        res
          .writeHead(answer.status, {
            'content-type': answer.headers.get('content-type') ?? 'application/json',
          })
          .end(body)
      })().catch((err: unknown) => res.writeHead(502).end(String(err)))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

describe('[placement] auth_type = password against a real Keystone', { skip }, () => {
  let ks: RunningKeystone
  let placement: RunningPlacement
  let proxyUrl: string
  let seen: Seen[]
  let closeProxy: (() => Promise<void>) | undefined

  before(async () => {
    ;[ks, placement] = await Promise.all([startKeystone(), startPlacement()])
    const proxy = await validatingProxy(ks, placement.url)
    proxyUrl = proxy.url
    seen = proxy.seen
    closeProxy = proxy.close
    const service = await ks.createProject('service')
    await ks.createUser('cyborg-placement', service, ['admin'])
    // The catalog: Placement's public endpoint (the proxy), and an internal one nobody answers on.
    const post = async (p: string, body: unknown) => {
      const res = await fetch(`${ks.url}${p}`, {
        method: 'POST',
        headers: { 'x-auth-token': await ks.adminToken(), 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
      assert.equal(res.status, 201, `Keystone POST ${p}: ${await res.clone().text()}`)
      return (await res.json()) as Record<string, { id: string }>
    }
    const { service: svc } = await post('/services', {
      service: { type: 'placement', name: 'placement' },
    })
    await post('/endpoints', {
      endpoint: { service_id: svc!.id, interface: 'public', region_id: 'RegionOne', url: proxyUrl },
    })
    await post('/endpoints', {
      endpoint: {
        service_id: svc!.id,
        interface: 'internal',
        region_id: 'RegionOne',
        url: 'http://127.0.0.1:9/',
      },
    })
  })
  after(async () => {
    await Promise.all([closeProxy?.(), ks?.stop(), placement?.stop()])
  })

  const conductorClient = () => {
    const config = loadConfig({
      files: [],
      env: {
        CYBORG_PLACEMENT__AUTH_TYPE: 'password',
        CYBORG_PLACEMENT__AUTH_URL: ks.url,
        CYBORG_PLACEMENT__USERNAME: 'cyborg-placement',
        CYBORG_PLACEMENT__PASSWORD: USER_PASSWORD,
        CYBORG_PLACEMENT__PROJECT_NAME: 'service',
        CYBORG_PLACEMENT__REGION_NAME: 'RegionOne',
      },
    })
    assert.equal(config.placement.endpoint_override, undefined)
    return placementOptions(config)!.client
  }

  it('finds Placement in the catalog and writes to it with one cached real token', async () => {
    const client = conductorClient()
    const uuid = randomUUID()
    const created = await client.createProvider({ uuid, name: `rp-${uuid}` })
    assert.equal(created?.uuid, uuid)
    assert.equal(client.endpoint, proxyUrl)
    await client.ensureTrait('CUSTOM_OUTBOUND_AUTH')
    await client.setTraits(uuid, created!.generation, ['CUSTOM_OUTBOUND_AUTH'])
    // Placement itself has it (read back with its own noauth2 admin client).
    assert.deepEqual(await placement.client.getTraits(uuid), ['CUSTOM_OUTBOUND_AUTH'])
    assert.equal(seen.length, 3)
    assert.equal(new Set(seen.map((s) => s.token)).size, 1, 'one token for every call')
    assert.deepEqual([...new Set(seen.map((s) => s.who))], ['cyborg-placement@service'])
    assert.match(seen[0]!.token, /^gAAAA/, 'a fernet token')
  })

  it('takes a new token when Placement refuses a revoked one, and retries the call', async () => {
    const client = conductorClient()
    const uuid = randomUUID()
    await client.createProvider({ uuid, name: `rp-${uuid}` })
    const first = seen.at(-1)!.token
    await ks.revokeToken(first)
    const before = seen.length
    assert.equal((await client.getProvider(uuid))?.uuid, uuid)
    const after = seen.slice(before)
    assert.deepEqual(
      after.map((s) => s.who),
      ['invalid (404)', 'cyborg-placement@service'],
    )
    assert.equal(after[0]!.token, first)
    assert.notEqual(after[1]!.token, first)
  })
})
