import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Logger } from '../domain/logger.js'
import type { PolicySubject } from './enforcer.js'
import { createReloadingEnforcer } from './reloading-enforcer.js'

let dir: string
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'cyborg-policy-reload-'))
})
after(() => rmSync(dir, { recursive: true, force: true }))

const admin: PolicySubject = {
  userId: 'u',
  projectId: 'p1',
  roles: ['admin', 'member', 'reader'],
  isAdmin: true,
  systemScope: false,
  serviceRoles: [],
}
const RULE = 'cyborg:device_profile:get_all'

/** A logger that keeps its error lines. */
function recorder() {
  const errors: string[] = []
  const infos: string[] = []
  const log: Logger = {
    error: (a: unknown, b?: unknown) => void errors.push(String(b ?? a)),
    warn: () => {},
    info: (a: unknown, b?: unknown) => void infos.push(String(b ?? a)),
    debug: () => {},
    child: () => log,
  }
  return { log, errors, infos }
}

/** A clock the test moves. */
function clock() {
  let t = 0
  return { now: () => t, advance: (ms: number) => void (t += ms) }
}

const none = { configFiles: [], searchDirs: [] }

void test('a changed policy file is read on the first check after the interval, not before', () => {
  const file = join(dir, 'a.yaml')
  writeFileSync(file, '"cyborg:arq:get_all": "rule:admin_api"\n')
  const c = clock()
  const { log, infos } = recorder()
  const e = createReloadingEnforcer(
    { oslo_policy: { policy_file: file } },
    { ...none, log, now: c.now, checkIntervalMs: 5000 },
  )
  assert.equal(e.allowed(RULE, admin), true)
  writeFileSync(file, `"${RULE}": "!"\n`)
  c.advance(4999)
  assert.equal(e.allowed(RULE, admin), true, 'not looked at within the interval')
  c.advance(1)
  assert.equal(e.allowed(RULE, admin), false, 'read at the first check after it')
  assert.throws(() => e.enforce(RULE, admin), { name: 'ForbiddenError' })
  assert.match(infos.join('\n'), /policy: rules reloaded from .*a\.yaml/)
})

void test('a broken file keeps the rules in force and is reported once, with its file and line', () => {
  const file = join(dir, 'b.yaml')
  writeFileSync(file, `"${RULE}": "!"\n`)
  const c = clock()
  const { log, errors } = recorder()
  const e = createReloadingEnforcer(
    { oslo_policy: { policy_file: file } },
    { ...none, log, now: c.now, checkIntervalMs: 10 },
  )
  assert.equal(e.allowed(RULE, admin), false)
  writeFileSync(file, `"${RULE}": "@"\n"other": [unclosed\n`)
  for (let i = 0; i < 3; i++) {
    c.advance(10)
    assert.equal(e.allowed(RULE, admin), false, 'the old rules stay')
  }
  assert.equal(errors.length, 1, errors.join('\n'))
  assert.match(errors[0]!, /b\.yaml: not valid YAML or JSON at line \d+:/)
  assert.match(errors[0]!, /keeping the rules in force/)
  // Fixed: applied at the next check.
  writeFileSync(file, `"${RULE}": "@"\n`)
  c.advance(10)
  assert.equal(e.allowed(RULE, admin), true)
})

void test('reload() reads at once, and may name another policy_file; a missing one keeps the old', () => {
  const first = join(dir, 'c1.yaml')
  const second = join(dir, 'c2.yaml')
  writeFileSync(first, `"${RULE}": "!"\n`)
  writeFileSync(second, `"${RULE}": "role:admin"\n`)
  const c = clock()
  const { log, errors } = recorder()
  const e = createReloadingEnforcer(
    { oslo_policy: { policy_file: first } },
    { ...none, log, now: c.now, checkIntervalMs: 60_000 },
  )
  assert.equal(e.allowed(RULE, admin), false)
  assert.equal(e.reload({ oslo_policy: { policy_file: second } }), true)
  assert.equal(e.policyFile, second)
  assert.equal(e.allowed(RULE, admin), true)
  assert.equal(e.reload({ oslo_policy: { policy_file: join(dir, 'missing.yaml') } }), false)
  assert.match(errors.join('\n'), /missing\.yaml does not exist/)
  assert.equal(e.policyFile, second)
  assert.equal(e.allowed(RULE, admin), true)
})

void test('the default file may come and go: present, its rules; absent, the defaults', () => {
  const confDir = join(dir, 'd')
  mkdirSync(confDir)
  const c = clock()
  const e = createReloadingEnforcer(
    { oslo_policy: { policy_file: 'policy.yaml' } },
    { configFiles: [join(confDir, 'cyborg.conf')], searchDirs: [], now: c.now, checkIntervalMs: 1 },
  )
  assert.equal(e.policyFile, undefined)
  assert.equal(e.allowed(RULE, admin), true)
  writeFileSync(join(confDir, 'policy.yaml'), `"${RULE}": "!"\n`)
  c.advance(1)
  assert.equal(e.allowed(RULE, admin), false)
  assert.equal(e.policyFile, join(confDir, 'policy.yaml'))
  rmSync(join(confDir, 'policy.yaml'))
  c.advance(1)
  assert.equal(e.allowed(RULE, admin), true)
  assert.equal(e.policyFile, undefined)
})
