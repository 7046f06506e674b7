/**
 * The Barbican client's answers that a healthy real Barbican does not give on demand (the real one
 * runs in test/glance/signed-images.test.ts): refusals, a server error, no server at all, and a
 * token Barbican stops accepting.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { freePort } from '../../test/support/service.js'
import { createBarbicanClient } from './barbican.js'

void describe('Barbican client failures', () => {
  let server: Server
  let url: string
  const seen: string[] = []
  before(async () => {
    server = createServer((req, res) => {
      seen.push(`${req.url} ${String(req.headers['x-auth-token'])} ${String(req.headers.accept)}`)
      const [, , , id, payload] = (req.url ?? '').split('/')
      const json = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' })
        res.end(JSON.stringify(body))
      }
      if (id === 'forbidden') return json(403, { code: 403, title: 'Forbidden' })
      if (id === 'broken') return json(500, { code: 500, title: 'Internal Server Error' })
      if (req.headers['x-auth-token'] === 'stale') return json(401, { code: 401 })
      if (!payload)
        return json(200, { secret_type: 'certificate', content_types: { default: 'text/plain' } })
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.end('-----BEGIN CERTIFICATE-----\n')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  after(() => new Promise<void>((resolve) => server.close(() => resolve())))

  const client = (token?: string) =>
    createBarbicanClient({ endpoint: url, timeoutMs: 5000, ...(token ? { token } : {}) })

  void it('asks for the payload in the content type the secret was stored with', async () => {
    seen.length = 0
    const payload = await client('t1').getCertificate('c1', 'img')
    assert.equal(payload.toString(), '-----BEGIN CERTIFICATE-----\n')
    assert.deepEqual(seen, [
      '/v1/secrets/c1 t1 application/json',
      '/v1/secrets/c1/payload t1 text/plain',
    ])
  })

  void it('a refusal names the credentials; a server error or no server is unavailability', async () => {
    await assert.rejects(client().getCertificate('forbidden', 'img'), {
      name: 'InvalidInputError',
      code: 'CERTIFICATE_FORBIDDEN',
      message:
        /^signing certificate forbidden of image img \(img_signature_certificate_uuid\) cannot be read with \[barbican\]'s credentials \(403\)/,
    })
    await assert.rejects(client().getCertificate('broken', 'img'), {
      name: 'UnavailableError',
      code: 'KEY_MANAGER_UNAVAILABLE',
      message:
        /^cannot fetch signing certificate broken of image img: Barbican GET \/v1\/secrets\/broken answered 500/,
    })
    const nowhere = createBarbicanClient({
      endpoint: `http://127.0.0.1:${await freePort()}`,
      timeoutMs: 2000,
    })
    await assert.rejects(nowhere.getCertificate('c1', 'img'), {
      name: 'UnavailableError',
      code: 'KEY_MANAGER_UNAVAILABLE',
      message: /Barbican GET \/v1\/secrets\/c1: ECONNREFUSED/,
    })
  })

  void it('takes a fresh token once when Barbican answers 401', async () => {
    const tokens = ['stale', 'fresh']
    const rejected: string[] = []
    const withAuth = createBarbicanClient({
      endpoint: url,
      timeoutMs: 5000,
      auth: {
        prepare: () => Promise.resolve({ url, headers: { 'x-auth-token': tokens[0]! } }),
        rejected: (h) => {
          rejected.push(h['x-auth-token']!)
          tokens.shift()
        },
      },
    })
    assert.equal((await withAuth.getCertificate('c1', 'img')).length, 28)
    assert.deepEqual(rejected, ['stale'])
  })
})
