import { test } from 'node:test'
import assert from 'node:assert/strict'
import { parseRule, PolicySyntaxError } from './parser.js'
import { renderCheck } from './check.js'
import { RuleSet } from './rule-set.js'

const alice = {
  user_id: 'u1',
  project_id: 'p1',
  roles: ['Member', 'reader'],
  is_admin: false,
  service_roles: [],
}
const own = {
  project_id: 'p1',
  user_id: 'u1',
  owner: { project: 'p1' },
  'target.flat': 'x',
  count: 3,
  flag: true,
}

/** [rule, allowed for alice acting on `own`] */
const semantics: [string, boolean][] = [
  ['', true],
  ['   ', true],
  ['@', true],
  ['!', false],
  ['role:member', true], // case-insensitive, as oslo.policy compares roles
  ['role:MEMBER', true],
  ['role:admin', false],
  ['project_id:%(project_id)s', true],
  ['project_id:%(user_id)s', false],
  ['project_id:%(missing)s', false], // a target without the key: false, not an error
  ['project_id:%(owner.project)s', true], // nested target
  ['project_id:%(target.flat)s', false],
  ['user_id:u1', true],
  ['roles:reader', true], // a list credential matches when any element does
  ['is_admin:True', false],
  ['is_admin:False', true],
  ["'p1':%(project_id)s", true],
  ['"p2":%(project_id)s', false],
  ['True:%(flag)s', true],
  ['3:%(count)s', true],
  ['None:None', true],
  ['nosuch:x', false],
  ['role:member and role:admin', false],
  ['role:member or role:admin', true],
  ['not role:admin', true],
  ['NOT role:admin AND role:reader', true],
  ['role:admin or role:member and not role:reader', false], // not > and > or
  ['(role:admin or role:member) and role:reader', true],
  ['role:admin or (role:member and role:reader)', true],
  ['((role:member))', true],
  ['not (role:member or role:admin)', false],
  ['not not role:member', true],
  ['rule:members', true],
  ['rule:admins or rule:members', true],
  ['rule:admins', false],
  ['(project_id:%(project_id)s)', true],
  ['role:%(role)s', false],
]

const helpers = { members: 'role:member', admins: 'role:admin' }

for (const [text, expected] of semantics) {
  void test(`"${text}" → ${expected}`, () => {
    const set = RuleSet.parse({ ...helpers, r: text })
    assert.equal(set.allows('r', alice, own), expected)
    // Rendering and parsing again gives a rule that decides the same.
    const again = RuleSet.parse({ ...helpers, r: renderCheck(parseRule('r', text)) })
    assert.equal(again.allows('r', alice, own), expected)
  })
}

/** [rule, a part of the message] */
const bad: [string, RegExp][] = [
  ['role:admin and', /expected a check, "\(" or "not", found the end of the rule at column 15/],
  ['and role:admin', /expected a check.*found "and" at column 1/],
  [
    'role:admin role:member',
    /expected "and", "or" or the end of the rule, found "role:member" at column 12/,
  ],
  [
    '(role:admin',
    /expected "\)" to close the "\(" at column 1, found the end of the rule at column 12/,
  ],
  ['role:admin)', /found "\)" at column 11/],
  ['admin', /"admin" is not a check \(expected kind:match, @ or !\) at column 1/],
  ['role:', /nothing after ":" at column 1/],
  [':x', /nothing before ":"/],
  ['rule:', /"" is not a rule name/],
  ["'quoted'", /a quoted string \('quoted'\) is not a check/],
  ['project_id:%(project_id)d', /only %\(name\)s substitutions/],
  ['project_id:50%', /only %\(name\)s substitutions/],
  ['(role:a)and(role:b)', /only %\(name\)s substitutions/],
  ['http://example.com/check', /http: checks .* are not supported/],
  ['a-b:c', /"a-b" is neither a credential name nor a quoted literal/],
  ['not', /found the end of the rule/],
  ['()', /found "\)" at column 2/],
]

for (const [text, message] of bad) {
  void test(`"${text}" is a syntax error naming the rule and the column`, () => {
    assert.throws(
      () => parseRule('cyborg:arq:get_all', text),
      (err: unknown) => {
        assert.ok(err instanceof PolicySyntaxError)
        assert.equal(err.code, 'POLICY_SYNTAX')
        assert.match(err.message, /^policy rule "cyborg:arq:get_all": /)
        assert.match(err.message, message)
        return true
      },
    )
  })
}

void test('a rule: reference to an unknown rule is an error naming both', () => {
  assert.throws(
    () => RuleSet.parse({ a: 'rule:b or role:x' }),
    /policy rule "a" refers to rule:b, which is not defined/,
  )
})

void test('a cycle is an error listing it, including a rule that refers to itself', () => {
  assert.throws(
    () => RuleSet.parse({ a: 'rule:b', b: 'role:x or rule:c', c: 'rule:a' }),
    /cycle: a → b → c → a/,
  )
  assert.throws(() => RuleSet.parse({ me: 'not rule:me' }), /cycle: me → me/)
})

void test('errors from a file name the file', () => {
  assert.throws(
    () => RuleSet.parse({ x: 'role:a or' }, '/etc/cyborg/policy.yaml'),
    (err: unknown) => {
      assert.ok(err instanceof PolicySyntaxError)
      assert.match(err.message, /^\/etc\/cyborg\/policy\.yaml: policy rule "x": /)
      assert.equal(err.details?.['file'], '/etc/cyborg/policy.yaml')
      return true
    },
  )
})

void test('a diamond of references is not a cycle', () => {
  const set = RuleSet.parse({ top: 'rule:l and rule:r', l: 'rule:base', r: 'rule:base', base: '@' })
  assert.equal(set.allows('top', {}, {}), true)
})
