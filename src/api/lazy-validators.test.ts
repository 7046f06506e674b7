/** Route validators compiled on first use (lazy-validators.ts): every one compiles, none at start. */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import Fastify from 'fastify'
import { Type } from '@sinclair/typebox'
import { compileAllValidators, lazyValidators } from './lazy-validators.js'
import { createTestApp, faultOf, type TestApp } from '../../test/support/api-app.js'

void describe('lazy route validators', () => {
  let t: TestApp
  before(async () => (t = await createTestApp()))
  after(() => t.close())

  void it('a route validates (and names the field) after others compiled on first use', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v2/devices?limit=x' })
    assert.equal(res.statusCode, 400)
    assert.match(faultOf(res.body).faultstring, /limit/)
  })

  void it("compiles every route's schemas without an error (what the start did before)", () => {
    const compiled = compileAllValidators(t.app)
    assert.ok(compiled > 50, `${compiled} validators were pending`)
    assert.equal(compileAllValidators(t.app), 0)
  })

  void it('refuses a header schema property with a capital at registration', async () => {
    const validators = lazyValidators()
    const app = Fastify({
      schemaController: { compilersFactory: { buildValidator: validators.buildValidator } },
    })
    app.get('/x', { schema: { headers: Type.Object({ 'If-Match': Type.String() }) } }, () => 'x')
    await assert.rejects(async () => {
      await app.ready()
    }, /must be lower case/)
  })
})
