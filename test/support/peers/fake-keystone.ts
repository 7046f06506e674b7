/**
 * Small HTTP stand-ins for the Keystone session tests (src/openstack/keystone-session.test.ts and
 * keystone-settings.test.ts): a Keystone that plays the token API (`POST /v3/auth/tokens`: 201,
 * X-Subject-Token, token.issued_at/expires_at/catalog; 401 for a bad password) on a clock the
 * session shares, and a service that records the tokens it is sent. Each server listens on an
 * ephemeral port of 127.0.0.1 and closes in an `after` hook of the test that started it.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after } from 'node:test'
import type { PasswordAuth } from '../../../src/openstack/keystone-session.js'

export const HOUR = 3600_000

/** Starts an HTTP server on 127.0.0.1, closed after the current test; resolves with its base URL. */
async function listen(handler: Parameters<typeof createServer>[1]) {
  const server = createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  after(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** A Keystone stand-in: issues `tok-1`, `tok-2`, … valid for `lifeMs` from `clock`, with `catalog`. */
export async function fakeKeystone(catalog: unknown[] = []) {
  const state = {
    clock: Date.parse('2026-03-01T10:00:00Z'),
    lifeMs: HOUR,
    issued: 0,
    bodies: [] as unknown[],
  }
  const url = await listen((req, res) => {
    let text = ''
    req.on('data', (c: Buffer) => (text += c.toString()))
    req.on('end', () => {
      const body = JSON.parse(text) as {
        auth: { identity: { password: { user: { password: string } } } }
      }
      state.bodies.push(body)
      if (req.method !== 'POST' || req.url !== '/v3/auth/tokens')
        return void res.writeHead(404).end()
      if (body.auth.identity.password.user.password !== 'secret') {
        return void res
          .writeHead(401, { 'content-type': 'application/json' })
          .end('{"error": {"code": 401}}')
      }
      state.issued++
      const token = {
        issued_at: new Date(state.clock).toISOString(),
        expires_at: new Date(state.clock + state.lifeMs).toISOString(),
        catalog,
      }
      res
        .writeHead(201, {
          'content-type': 'application/json',
          'x-subject-token': `tok-${state.issued}`,
        })
        .end(JSON.stringify({ token }))
    })
  })
  const auth = (extra: Partial<PasswordAuth> = {}): PasswordAuth => ({
    authUrl: `${url}/v3`,
    username: 'cyborg',
    password: 'secret',
    projectName: 'service',
    timeoutMs: 5000,
    now: () => state.clock,
    ...extra,
  })
  return { url, state, auth }
}

/** A service that records the X-Auth-Token of each request and answers 401 unless `accept(token)`. */
export async function fakeService(accept: (token: string) => boolean = () => true) {
  const seen: IncomingHttpHeaders[] = []
  const url = await listen((req, res) => {
    seen.push(req.headers)
    const ok = accept(String(req.headers['x-auth-token']))
    res
      .writeHead(ok ? 200 : 401, { 'content-type': 'application/json' })
      .end(ok ? '{"traits": ["CUSTOM_A"]}' : '{}')
  })
  return { url, seen, tokens: () => seen.map((h) => h['x-auth-token']) }
}

/** Catalog endpoints from `{ 'interface@region': url }` (the region is optional). */
export const endpoints = (urls: Record<string, string>) =>
  Object.entries(urls).map(([key, url]) => {
    const [iface, region] = key.split('@')
    return { interface: iface, region_id: region, region, url }
  })
