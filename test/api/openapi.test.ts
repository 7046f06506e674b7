/**
 * The OpenAPI 3.1 documents (issue 17): `/v2/openapi.json` and `/v1/openapi.json` are served
 * without a token, are valid OpenAPI 3.1 (checked by @readme/openapi-parser against the
 * specification's own schema and its rules), and between them hold every route Fastify
 * registered, by method, each with a summary and a documented response (success and errors).
 * The route list comes from Fastify's own router (`printRoutes`), not from the generator; the
 * only routes left out are the 405 answers of src/api/routing.ts, recognised by answering 405.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { compileErrors, validate } from '@readme/openapi-parser'
import type { FastifyInstance } from 'fastify'
import { NotAuthenticatedError } from '../../src/domain/errors.js'
import { createTestApp, type TestApp } from '../support/api-app.js'
import { HOST } from './stack.js'

type Operation = {
  summary?: string
  parameters?: { name: string; in: string }[]
  responses: Record<string, { content?: unknown; description: string }>
}
type Document = { openapi: string; paths: Record<string, Record<string, Operation>> }

/** Every (method, url) of the router, from its printed tree; `:param` kept as Fastify has it. */
export function registeredRoutes(app: FastifyInstance): { method: string; url: string }[] {
  const out: { method: string; url: string }[] = []
  const stack: string[] = []
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^([│ ├└─]*)(\S+) \(([A-Z, ]+)\)$/u.exec(line)
    if (!m) continue
    const depth = m[1]!.length / 4
    stack.length = depth - 1
    stack.push(m[2]!)
    const url = stack.join('')
    for (const method of m[3]!.split(', ')) out.push({ method, url })
  }
  return out
}

/** `/devices/:uuid` → `/devices/{uuid}`; `/v2/` → `/v2`. */
const openapiPath = (url: string) => url.replace(/:([A-Za-z_]+)/g, '{$1}').replace(/(.)\/$/, '$1')

void describe('OpenAPI documents', () => {
  let t: TestApp
  /** Keystone auth that refuses every token: the documents must still be served. */
  let locked: TestApp
  const docs: Record<'v1' | 'v2', Document> = {} as never
  before(async () => {
    t = await createTestApp()
    locked = await createTestApp({
      auth: {
        strategy: 'keystone',
        authenticate: () => {
          throw new NotAuthenticatedError('no token is valid here')
        },
      },
    })
    for (const which of ['v1', 'v2'] as const) {
      const res = await locked.app.inject({
        method: 'GET',
        url: `/${which}/openapi.json`,
        headers: { host: HOST },
      })
      assert.equal(res.statusCode, 200, res.body)
      assert.match(String(res.headers['content-type']), /^application\/json/)
      docs[which] = res.json()
    }
  })
  after(async () => {
    await t.close()
    await locked.close()
  })

  for (const which of ['v1', 'v2'] as const) {
    void it(`${which}: valid OpenAPI 3.1`, async () => {
      assert.equal(docs[which].openapi, '3.1.0')
      // validate() dereferences in place: give it a copy.
      const result = await validate(structuredClone(docs[which]) as never)
      assert.equal(result.valid, true, result.valid ? '' : compileErrors(result))
      assert.deepEqual(result.warnings, [])
    })
  }

  void it('holds every registered route, by method, in the right document', async () => {
    const missing: string[] = []
    const routes = registeredRoutes(t.app)
    assert.ok(routes.length > 300, `only ${routes.length} routes parsed`)
    for (const { method, url } of routes) {
      const path = openapiPath(url)
      const doc = url === '/v1' || url.startsWith('/v1/') ? docs.v1 : docs.v2
      const item = doc.paths[path]
      const op = item?.[method.toLowerCase()] ?? (method === 'HEAD' ? item?.get : undefined)
      if (op !== undefined) continue
      // Not documented: only the 405 answers of resource() may be, and they say so.
      const res = await t.app.inject({
        method: method as 'GET',
        url: url.replace(/:[A-Za-z_]+/g, '3fa85f64-5717-4562-b3fc-2c963f66afa6'),
      })
      if (res.statusCode !== 405) missing.push(`${method} ${url} (answers ${res.statusCode})`)
    }
    assert.deepEqual(missing, [])
  })

  void it('documents each operation: summary, path parameters, success and error bodies', () => {
    for (const doc of [docs.v1, docs.v2]) {
      for (const [path, item] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(item)) {
          const where = `${method.toUpperCase()} ${path}`
          assert.ok(op.summary, `${where}: no summary`)
          for (const name of path.match(/\{([^}]+)\}/g) ?? []) {
            const param = op.parameters?.find((p) => p.in === 'path' && `{${p.name}}` === name)
            assert.ok(param, `${where}: ${name} undocumented`)
          }
          const codes = Object.keys(op.responses)
          assert.ok(
            codes.some((c) => c.startsWith('2')),
            `${where}: no success response`,
          )
          for (const code of codes.filter((c) => Number(c) >= 400)) {
            // 423 (nova's "still binding") has no body; /healthcheck's 503 is oslo's own format.
            if (code === '423' || path === '/healthcheck') continue
            const body = JSON.stringify(op.responses[code]!.content ?? '')
            assert.match(body, /ErrorBody/, `${where} ${code}: not the error body`)
          }
        }
      }
    }
  })

  void it('the error body is the compat-v2 one, and a real error matches it', async () => {
    const schema = (docs.v2 as unknown as { components: { schemas: Record<string, unknown> } })
      .components.schemas.ErrorBody as { properties: Record<string, unknown>; required: string[] }
    assert.deepEqual(schema.required, ['error_message'])
    const res = await locked.app.inject({ method: 'GET', url: '/v2/devices' })
    assert.equal(res.statusCode, 401)
    assert.deepEqual(Object.keys(res.json() as object), ['error_message'])
  })

  void it('puts v1 and the administration routes in /v1/openapi.json only', () => {
    assert.ok(docs.v1.paths['/v1/drivers/{name}/install']?.post)
    assert.ok(docs.v1.paths['/v1/accelerators/{uuid}']?.put)
    assert.ok(docs.v2.paths['/v2/capacity']?.get)
    assert.ok(docs.v2.paths['/capacity']?.get, 'the unprefixed alias')
    assert.ok(docs.v2.paths['/healthcheck']?.head)
    assert.equal(
      Object.keys(docs.v2.paths).filter((p) => p.startsWith('/v1')).length,
      0,
      'no v1 path in the v2 document',
    )
    assert.equal(Object.keys(docs.v1.paths).filter((p) => !p.startsWith('/v1')).length, 0)
  })
})
