/**
 * The default rules against the personas: the whole matrix is the table below, so that a reviewer
 * sees who may do what. Tokens carry Keystone's implied roles (admin ⊃ manager ⊃ member ⊃ reader).
 * The target is a resource of project p1.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ForbiddenError } from '../domain/errors.js'
import { createEnforcerFromRules, DEFAULT_RULES } from './enforcer.js'
import type { PolicySubject } from './enforcer.js'
import type { RequestContext } from '../domain/request-context.js'

// The API's request context is what the enforcer takes (a compile-time check).
export type _ContextFits = RequestContext extends PolicySubject ? true : never
const _fits: _ContextFits = true
void _fits

function persona(
  projectId: string,
  roles: string[],
): PolicySubject & { serviceToken: boolean; authStrategy: 'keystone' | 'noauth' } {
  return {
    userId: `user-${roles[0] ?? 'none'}-${projectId}`,
    projectId,
    roles,
    isAdmin: roles.includes('admin'),
    systemScope: false,
    serviceRoles: [],
    serviceToken: false,
    authStrategy: 'keystone',
  }
}

const PERSONAS = {
  admin: persona('p1', ['admin', 'manager', 'member', 'reader']),
  manager: persona('p1', ['manager', 'member', 'reader']),
  member: persona('p1', ['member', 'reader']),
  reader: persona('p1', ['reader']),
  service: persona('service', ['service']), // Nova's service user, in the service project
  other: persona('p2', ['member', 'reader']), // a member of another project
  none: persona('p1', []), // a token with no role at all
}
const TARGET = { project_id: 'p1', user_id: 'someone' }

const Y = true
const N = false
// prettier-ignore
const MATRIX: Record<string, [admin: boolean, manager: boolean, member: boolean, reader: boolean, service: boolean, other: boolean, none: boolean]> = {
  //                                  admin manager member reader service other none
  'admin_api':                        [Y,    N,      N,     N,     N,      N,    N],
  'project_admin_api':                [Y,    N,      N,     N,     N,      N,    N],
  'project_manager_api':              [Y,    Y,      N,     N,     N,      N,    N],
  'project_member_api':               [Y,    Y,      Y,     N,     N,      N,    N],
  'project_reader_api':               [Y,    Y,      Y,     Y,     N,      N,    N],
  'service_api':                      [N,    N,      N,     N,     Y,      N,    N],
  'project_manager_or_admin':         [Y,    Y,      N,     N,     N,      N,    N],
  'project_member_or_admin':          [Y,    Y,      Y,     N,     N,      N,    N],
  'project_reader_or_admin':          [Y,    Y,      Y,     Y,     N,      N,    N],
  'project_member_or_service':        [Y,    Y,      Y,     N,     Y,      N,    N],
  'admin_or_owner':                   [Y,    Y,      Y,     Y,     N,      N,    Y],
  'default':                          [Y,    Y,      Y,     Y,     N,      N,    Y],
  'is_admin':                         [Y,    N,      N,     N,     N,      N,    N],
  'allow':                            [Y,    Y,      Y,     Y,     Y,      Y,    Y],
  'deny':                             [N,    N,      N,     N,     N,      N,    N],
  'public_api':                       [N,    N,      N,     N,     N,      N,    N],
  'cyborg:arq:get_all':               [Y,    Y,      Y,     Y,     N,      N,    N],
  'cyborg:arq:get_one':               [Y,    Y,      Y,     Y,     N,      N,    N],
  'cyborg:arq:create':                [Y,    Y,      Y,     N,     Y,      N,    N],
  'cyborg:arq:update':                [Y,    Y,      Y,     N,     Y,      N,    N],
  'cyborg:arq:delete':                [Y,    Y,      Y,     N,     Y,      N,    N],
  'cyborg:device_profile:get_all':    [Y,    Y,      Y,     Y,     N,      N,    N],
  'cyborg:device_profile:get_one':    [Y,    Y,      Y,     Y,     N,      N,    N],
  'cyborg:device_profile:explain':    [Y,    Y,      Y,     Y,     N,      N,    N],
  'cyborg:device_profile:create':     [Y,    N,      N,     N,     N,      N,    N],
  'cyborg:device_profile:delete':     [Y,    N,      N,     N,     N,      N,    N],
  'cyborg:capacity:get':              [Y,    Y,      Y,     Y,     N,      N,    N],
  'cyborg:quota:get':                 [Y,    Y,      Y,     Y,     N,      N,    N],
  'cyborg:custody:get_all':           [Y,    Y,      Y,     Y,     N,      N,    N],
  'cyborg:custody:get_one':           [Y,    Y,      Y,     Y,     N,      N,    N],
  'cyborg:event:get_all':            [Y,    Y,      Y,     Y,     N,      N,    N],
  'cyborg:event:stream':             [Y,    Y,      Y,     Y,     N,      N,    N],
  'cyborg:device:get_all':            [Y,    Y,      N,     N,     N,      N,    N],
  'cyborg:device:get_one':            [Y,    Y,      N,     N,     N,      N,    N],
  'cyborg:device:disable':            [Y,    N,      N,     N,     N,      N,    N],
  'cyborg:device:enable':             [Y,    N,      N,     N,     N,      N,    N],
  'cyborg:device:ready':              [Y,    Y,      N,     N,     N,      N,    N],
  'cyborg:device:clean':              [Y,    N,      N,     N,     N,      N,    N],
  'cyborg:device:configure':          [Y,    N,      N,     N,     N,      N,    N],
  'cyborg:deployable:get_all':        [Y,    Y,      N,     N,     N,      N,    N],
  'cyborg:deployable:get_one':        [Y,    Y,      N,     N,     N,      N,    N],
  'cyborg:deployable:program':        [Y,    N,      N,     N,     N,      N,    N],
  'cyborg:attribute:get_all':         [Y,    Y,      N,     N,     N,      N,    N],
  'cyborg:attribute:get_one':         [Y,    Y,      N,     N,     N,      N,    N],
  'cyborg:attribute:create':          [Y,    N,      N,     N,     N,      N,    N],
  'cyborg:attribute:delete':          [Y,    N,      N,     N,     N,      N,    N],
  'cyborg:v1_accelerator:get_all':    [Y,    Y,      N,     N,     N,      N,    N],
  'cyborg:v1_accelerator:get_one':    [Y,    Y,      N,     N,     N,      N,    N],
  'cyborg:v1_accelerator:create':     [Y,    Y,      N,     N,     N,      N,    N],
  'cyborg:v1_accelerator:update_spec':[Y,    Y,      N,     N,     N,      N,    N],
  'cyborg:v1_accelerator:attach':     [Y,    Y,      N,     N,     N,      N,    N],
  'cyborg:v1_accelerator:detach':     [Y,    Y,      N,     N,     N,      N,    N],
  'cyborg:v1_accelerator:ready':      [Y,    Y,      N,     N,     N,      N,    N],
  'cyborg:driver:get_all':            [Y,    Y,      N,     N,     N,      N,    N],
  'cyborg:driver:install':            [Y,    Y,      N,     N,     N,      N,    N],
  'cyborg:driver:uninstall':          [Y,    Y,      N,     N,     N,      N,    N],
  'cyborg:driver:update':             [Y,    Y,      N,     N,     N,      N,    N],
  'cyborg:discovery:run':             [Y,    Y,      N,     N,     N,      N,    N],
  'cyborg:backend_service:get_all':   [Y,    Y,      N,     N,     N,      N,    N],
  'cyborg:status:get':                [Y,    Y,      N,     N,     N,      N,    N],
  'cyborg:telemetry:get':             [Y,    N,      N,     N,     N,      N,    N],
  'cyborg:session:get':               [Y,    Y,      Y,     Y,     Y,      Y,    Y],
  'cyborg:webhook:get_all':           [Y,    N,      N,     N,     N,      N,    N],
  'cyborg:webhook:get_one':           [Y,    N,      N,     N,     N,      N,    N],
  'cyborg:webhook:create':            [Y,    N,      N,     N,     N,      N,    N],
  'cyborg:webhook:update':            [Y,    N,      N,     N,     N,      N,    N],
  'cyborg:webhook:delete':            [Y,    N,      N,     N,     N,      N,    N],
  'cyborg:webhook:get_deliveries':    [Y,    N,      N,     N,     N,      N,    N],
}

const enforcer = createEnforcerFromRules()
const names = Object.keys(PERSONAS) as (keyof typeof PERSONAS)[]

void test('the matrix lists every registered rule, and only those', () => {
  assert.deepEqual(Object.keys(MATRIX).sort(), DEFAULT_RULES.map((r) => r.name).sort())
})

for (const [rule, row] of Object.entries(MATRIX)) {
  void test(rule, () => {
    const got = names.map((p) => enforcer.allowed(rule, PERSONAS[p], TARGET))
    assert.deepEqual(
      Object.fromEntries(names.map((p, i) => [p, got[i]])),
      Object.fromEntries(names.map((p, i) => [p, row[i]])),
    )
  })
}

void test('a denial is a ForbiddenError in OpenStack words, naming the rule', () => {
  assert.throws(
    () => enforcer.enforce('cyborg:arq:delete', PERSONAS.reader, TARGET),
    (err: unknown) => {
      assert.ok(err instanceof ForbiddenError)
      assert.equal(err.code, 'POLICY_NOT_AUTHORIZED')
      assert.equal(err.message, "Policy doesn't allow cyborg:arq:delete to be performed.")
      assert.deepEqual(err.details, { rule: 'cyborg:arq:delete' })
      return true
    },
  )
  assert.doesNotThrow(() => enforcer.enforce('cyborg:arq:delete', PERSONAS.member, TARGET))
})

void test("without a target the caller's own project is the target, as in OpenStack Cyborg", () => {
  assert.equal(enforcer.allowed('cyborg:arq:get_all', PERSONAS.other), true)
  assert.equal(enforcer.allowed('cyborg:arq:get_all', PERSONAS.other, TARGET), false)
})

void test('API rules are project-scoped: a system-scoped admin, or a token without a project, is refused', () => {
  const system = { ...PERSONAS.admin, projectId: null, systemScope: true }
  assert.equal(enforcer.allowed('cyborg:device:get_all', system, TARGET), false)
  assert.equal(
    enforcer.allowed('cyborg:device:get_all', { ...PERSONAS.admin, projectId: null }, TARGET),
    false,
  )
  assert.equal(enforcer.allowed('admin_api', system, TARGET), true) // base rules carry no scope
})

void test('enforcing a rule that is not registered is a bug (500), not a denial', () => {
  assert.throws(
    () => enforcer.enforce('cyborg:nope', PERSONAS.admin),
    (err: unknown) => {
      assert.ok(!(err instanceof ForbiddenError))
      assert.match((err as Error).message, /policy rule cyborg:nope is not registered/)
      return true
    },
  )
})

void test('every API rule documents the operations it guards and says what it is', () => {
  for (const r of DEFAULT_RULES) {
    assert.ok(r.description.length > 10, r.name)
    if (r.name.startsWith('cyborg:')) {
      assert.ok(r.operations.length > 0, r.name)
      assert.deepEqual(r.scopeTypes, ['project'], r.name)
      for (const op of r.operations) assert.match(op.path, /^\/(v[12]|dashboard)\//, r.name)
    }
  }
})
