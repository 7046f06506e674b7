/**
 * src/api/validation-errors.ts on real ajv failures (a bare Fastify with app.ts's ajv options):
 * problem texts by keyword, the placeholders, keys at fault, and the bracket field names.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import Fastify, { type FastifyInstance } from 'fastify'
import { Type, type TSchema } from '@sinclair/typebox'
import {
  formatValidationError,
  AJV_OPTIONS,
  withFieldStyle,
  withProblem,
  type AjvError,
} from './validation-errors.js'

let app: FastifyInstance
const routes: Record<string, TSchema> = {}

/** Declares a route validating its body with `schema` (before `before` below starts the app). */
const route = (name: string, schema: TSchema) => {
  routes[name] = schema
  return async (body: unknown) => {
    const res = await app.inject({
      method: 'POST',
      url: `/${name}`,
      payload: JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
    })
    return res.statusCode === 400 ? res.body : `${res.statusCode}`
  }
}

const byKeyword = route(
  'by-keyword',
  withProblem(
    Type.Object(
      {
        n: withProblem(Type.Integer({ minimum: 1 }), {
          type: 'want a number, got {kind}',
          required: 'give n',
        }),
        s: Type.Optional(withProblem(Type.String({ maxLength: 2 }), 'at most 2, got {value}')),
        m: Type.Optional(Type.Array(Type.String())),
      },
      { additionalProperties: false },
    ),
    { type: 'want an object, got {kind}', additionalProperties: 'no {key} here' },
  ),
)

const single = route(
  'single',
  withFieldStyle(
    Type.Array(
      Type.Object({
        g: Type.Array(
          Type.Object(
            {},
            {
              propertyNames: withProblem(Type.String({ maxLength: 3 }), 'key {key} is over 3'),
              patternProperties: {
                '^': withProblem(Type.String(), 'want text at {key}, got {value}'),
              },
            },
          ),
        ),
      }),
      { maxItems: 1 },
    ),
    { brackets: true, single: true },
  ),
)
const plain = route(
  'plain',
  withFieldStyle(Type.Object({ a: Type.Array(Type.Object({ b: Type.String() })) }), {
    brackets: true,
  }),
)

// Every route is declared above: the app starts once (a top-level hook may run at once).
before(async () => {
  app = Fastify({
    ajv: {
      customOptions: {
        ...AJV_OPTIONS.customOptions,
        keywords: [...AJV_OPTIONS.customOptions.keywords],
      },
    },
  })
  app.setErrorHandler((err: { validation?: AjvError[] }, request, reply) => {
    const schema = request.routeOptions.schema?.body
    const text = formatValidationError(err.validation ?? [], 'body', { schema, data: request.body })
    return reply.code(400).send(text)
  })
  for (const [name, body] of Object.entries(routes))
    app.post(`/${name}`, { schema: { body } }, () => 'ok')
  await app.ready()
})
after(() => app.close())

void describe('problem texts by keyword', () => {
  void it('the owner node answers for its own keywords only', async () => {
    assert.equal(
      await byKeyword({ n: 'x' }),
      "Invalid input for field 'n': want a number, got a string",
    )
    // `minimum` has no entry: ajv's message, not the ancestor's map.
    assert.equal(await byKeyword({ n: 0 }), "Invalid input for field 'n': must be >= 1")
    assert.equal(
      await byKeyword([1, 2]),
      "Invalid input for field 'body': want an object, got a list of 2",
    )
    assert.equal(await byKeyword(null), "Invalid input for field 'body': want an object, got null")
  })
  void it('required and additionalProperties take the entry of the property and of the object', async () => {
    assert.equal(await byKeyword({}), "Invalid input for field 'n': give n")
    assert.equal(await byKeyword({ n: 1, zz: 1 }), `Invalid input for field 'zz': no "zz" here`)
  })
  void it('a string applies under its node; an unannotated node keeps the defaults', async () => {
    assert.equal(
      await byKeyword({ n: 1, s: 'abc' }),
      `Invalid input for field 's': at most 2, got "abc"`,
    )
    assert.equal(await byKeyword({ n: 1, m: [1] }), "Invalid input for field 'm/0': must be string")
    assert.equal(await byKeyword({ n: 1 }), '200')
  })
})

void describe('bracket field names', () => {
  void it('a list of one: the item is body[0], its fields are named as the body', async () => {
    assert.equal(await single([1]), "Invalid input for field 'body[0]': must be object")
    assert.equal(await single([{ g: 1 }]), "Invalid input for field 'g': must be array")
    assert.equal(
      await single([{ g: [{}, { 'a/b': 1 }] }]),
      `Invalid input for field 'g[1]["a/b"]': want text at "a/b", got 1`,
    )
    assert.equal(
      await single([{ g: [{ '~x': 1 }] }]),
      `Invalid input for field 'g[0]["~x"]': want text at "~x", got 1`,
    )
  })
  void it('a key that fails propertyNames is the field, and its {key}', async () => {
    assert.equal(
      await single([{ g: [{ abcd: 'x' }] }]),
      `Invalid input for field 'g[0]["abcd"]': key "abcd" is over 3`,
    )
  })
  void it('without single, and for an object body', async () => {
    assert.equal(
      await plain({ a: [{ b: 1 }] }),
      `Invalid input for field 'a[0]["b"]': must be string`,
    )
    assert.equal(await plain({ a: [{}] }), `Invalid input for field 'a[0]["b"]': required`)
  })
})
