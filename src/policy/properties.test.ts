/** Properties of the rule language over random rules, credentials and rule texts (fast-check). */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { parseRule, PolicySyntaxError } from './parser.js'
import { evaluate, renderCheck, type Check, type Credentials } from './check.js'

const ROLES = ['admin', 'member', 'reader', 'service']
const PROJECTS = ['p1', 'p2']

/** Random rules over a few roles and the project match, as rule text. */
const rule: fc.Arbitrary<string> = fc.letrec<{ expr: string }>((tie) => ({
  expr: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(
      '@',
      '!',
      ...ROLES.map((r) => `role:${r}`),
      'project_id:%(project_id)s',
      'is_admin:True',
      "'p1':%(project_id)s",
    ),
    fc
      .tuple(tie('expr'), fc.constantFrom('and', 'or'), tie('expr'))
      .map(([a, op, b]) => `(${a}) ${op} (${b})`),
    tie('expr').map((a) => `not (${a})`),
  ),
})).expr

const creds: fc.Arbitrary<Credentials> = fc.record({
  roles: fc.subarray(ROLES),
  project_id: fc.constantFrom(...PROJECTS),
  is_admin: fc.boolean(),
})
const target = fc.record({ project_id: fc.constantFrom(...PROJECTS) })

const noRules = (name: string): Check => {
  throw new Error(`no rule ${name}`)
}
const decide = (text: string, c: Credentials, t: Record<string, unknown>) =>
  evaluate(parseRule('r', text), c, t, noRules)

void test('not not X ≡ X', () => {
  fc.assert(
    fc.property(
      rule,
      creds,
      target,
      (x, c, t) => decide(`not not (${x})`, c, t) === decide(x, c, t),
    ),
  )
})

void test('A or B ≡ B or A, and A and B ≡ B and A', () => {
  fc.assert(
    fc.property(rule, rule, creds, target, (a, b, c, t) => {
      assert.equal(decide(`(${a}) or (${b})`, c, t), decide(`(${b}) or (${a})`, c, t))
      assert.equal(decide(`(${a}) and (${b})`, c, t), decide(`(${b}) and (${a})`, c, t))
    }),
  )
})

void test('De Morgan: not (A or B) ≡ not A and not B', () => {
  fc.assert(
    fc.property(
      rule,
      rule,
      creds,
      target,
      (a, b, c, t) =>
        decide(`not ((${a}) or (${b}))`, c, t) === decide(`not (${a}) and not (${b})`, c, t),
    ),
  )
})

void test('and binds tighter than or: A or B and C ≡ A or (B and C)', () => {
  fc.assert(
    fc.property(rule, rule, rule, creds, target, (a, b, c, cr, t) => {
      return (
        decide(`(${a}) or (${b}) and (${c})`, cr, t) ===
        decide(`(${a}) or ((${b}) and (${c}))`, cr, t)
      )
    }),
  )
})

void test('rendering a parsed rule and parsing it again decides the same', () => {
  fc.assert(
    fc.property(rule, creds, target, (x, c, t) => {
      const again = renderCheck(parseRule('r', x))
      assert.equal(decide(again, c, t), decide(x, c, t))
      assert.equal(renderCheck(parseRule('r', again)), again)
    }),
  )
})

void test('the parser throws nothing but PolicySyntaxError on any string', () => {
  const alphabet = fc.constantFrom(
    ...'()%:!@ \'"rulenotadmi_.$sp1'.split(''),
    ' and ',
    ' or ',
    ' not ',
    'role:',
    'rule:',
    '%(project_id)s',
  )
  const text = fc.oneof(
    fc.string(),
    fc.array(alphabet, { maxLength: 30 }).map((parts) => parts.join('')),
  )
  fc.assert(
    fc.property(text, (s) => {
      try {
        parseRule('r', s)
      } catch (err) {
        if (!(err instanceof PolicySyntaxError)) throw err
        assert.match(err.message, /^policy rule "r": /)
      }
    }),
    { numRuns: 2000 },
  )
})
