import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError } from '../domain/errors.js'
import { noopLogger, type Logger } from '../domain/logger.js'
import { createEnforcer } from './enforcer.js'
import type { PolicySubject } from './enforcer.js'
import { PolicySyntaxError } from './parser.js'

let dir: string
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'cyborg-policy-'))
})
after(() => rmSync(dir, { recursive: true, force: true }))

function file(name: string, text: string): string {
  const p = join(dir, name)
  mkdirSync(join(p, '..'), { recursive: true })
  writeFileSync(p, text)
  return p
}

const reader: PolicySubject & { serviceToken: boolean; authStrategy: 'keystone' | 'noauth' } = {
  userId: 'u',
  projectId: 'p1',
  roles: ['reader'],
  isAdmin: false,
  systemScope: false,
  serviceRoles: [],
  serviceToken: false,
  authStrategy: 'keystone',
}
const none = { configFiles: [], searchDirs: [] }

void test('a YAML file overrides rules; the others keep their defaults', () => {
  const policy = file(
    'a/policy.yaml',
    '# readers may see devices\n"cyborg:device:get_all": "rule:project_reader_or_admin"\n',
  )
  const e = createEnforcer({ oslo_policy: { policy_file: policy } }, none)
  assert.equal(e.policyFile, policy)
  assert.equal(e.allowed('cyborg:device:get_all', reader), true)
  assert.equal(e.allowed('cyborg:device:get_one', reader), false)
  const rule = e.rules().find((r) => r.name === 'cyborg:device:get_all')
  assert.equal(rule?.checkStr, 'rule:project_reader_or_admin')
  assert.equal(rule?.defaultCheckStr, 'rule:project_manager_or_admin')
  assert.equal(rule?.overriddenIn, policy)
})

void test('a JSON file works too, and an override may refer to rules the file defines', () => {
  const policy = file(
    'b/policy.json',
    JSON.stringify({
      readers: 'role:reader',
      'cyborg:status:get': 'rule:readers or rule:admin_api',
    }),
  )
  const warnings: string[] = []
  const log: Logger = {
    ...noopLogger,
    warn: (...args: unknown[]) => void warnings.push(String(args.at(-1))),
  }
  const e = createEnforcer({ oslo_policy: { policy_file: policy } }, { ...none, log })
  assert.equal(e.allowed('cyborg:status:get', reader), true)
  // A rule name Cyborg does not know is a warning, not an error.
  assert.equal(warnings.length, 1)
  assert.match(warnings[0] ?? '', /"readers" is not a Cyborg policy rule/)
  assert.equal(e.rules().find((r) => r.name === 'readers')?.custom, true)
})

void test('policy.yaml is found next to the last config file that has one, then in the search dirs', () => {
  const conf1 = file('c1/cyborg.conf', '')
  const conf2 = file('c2/cyborg.conf', '')
  file('c1/policy.yaml', '"cyborg:status:get": "@"\n')
  file('etc/policy.yaml', '"cyborg:status:get": "!"\n')
  const cfg = { oslo_policy: { policy_file: 'policy.yaml' } }
  assert.equal(
    createEnforcer(cfg, { configFiles: [conf1, conf2], searchDirs: [join(dir, 'etc')] }).policyFile,
    join(dir, 'c1/policy.yaml'),
  )
  assert.equal(
    createEnforcer(cfg, { configFiles: [conf2], searchDirs: [join(dir, 'etc')] }).policyFile,
    join(dir, 'etc/policy.yaml'),
  )
  // The default file may be absent: the defaults apply.
  const e = createEnforcer(cfg, { configFiles: [conf2], searchDirs: [] })
  assert.equal(e.policyFile, undefined)
  assert.equal(e.allowed('cyborg:status:get', reader), false)
})

void test('a file named explicitly must exist', () => {
  assert.throws(
    () =>
      createEnforcer(
        { oslo_policy: { policy_file: 'mine.yaml' } },
        { configFiles: [join(dir, 'x/cyborg.conf')], searchDirs: [] },
      ),
    (err: unknown) =>
      err instanceof ConfigError &&
      /\[oslo_policy\] policy_file: mine\.yaml does not exist/.test(err.message),
  )
})

void test('a syntax error stops start-up with a message naming the file, the rule and the problem', () => {
  const policy = file('d/policy.yaml', '"cyborg:arq:get_all": "role:reader or"\n')
  assert.throws(
    () => createEnforcer({ oslo_policy: { policy_file: policy } }, none),
    (err: unknown) => {
      assert.ok(err instanceof PolicySyntaxError)
      assert.ok(err instanceof ConfigError)
      assert.equal(
        err.message,
        `${policy}: policy rule "cyborg:arq:get_all": expected a check, "(" or "not", found the end of the rule at column 15`,
      )
      return true
    },
  )
})

void test('unknown references and cycles in the file name the file', () => {
  const unknown = file('e/policy.yaml', '"cyborg:arq:get_all": "rule:nope"\n')
  assert.throws(
    () => createEnforcer({ oslo_policy: { policy_file: unknown } }, none),
    new RegExp(`${unknown}: policy rule "cyborg:arq:get_all" refers to rule:nope`),
  )
  const cycle = file(
    'f/policy.yaml',
    'admin_api: "rule:project_admin_api"\nproject_admin_api: "rule:admin_api"\n',
  )
  assert.throws(
    () => createEnforcer({ oslo_policy: { policy_file: cycle } }, none),
    /cycle: admin_api → project_admin_api → admin_api/,
  )
})

void test('a file that is not a mapping of strings is refused, naming the file and the rule', () => {
  const cases: [string, RegExp][] = [
    ['"a": [1, 2]\n', /policy rule "a": the rule must be a string/],
    ['- role:admin\n', /expected a mapping of rule name to rule/],
    ['a: "x"\na: "y"\n', /not valid YAML or JSON at line 2/],
    ['{"a": ', /not valid YAML or JSON/],
  ]
  for (const [i, [text, message]] of cases.entries()) {
    const p = file(`g${i}/policy.yaml`, text)
    assert.throws(
      () => createEnforcer({ oslo_policy: { policy_file: p } }, none),
      (err: unknown) =>
        err instanceof ConfigError && err.message.startsWith(`${p}: `) && message.test(err.message),
    )
  }
  // An empty file overrides nothing.
  const empty = file('h/policy.yaml', '# nothing yet\n')
  assert.equal(
    createEnforcer({ oslo_policy: { policy_file: empty } }, none).allowed(
      'cyborg:arq:get_all',
      reader,
    ),
    true,
  )
})
