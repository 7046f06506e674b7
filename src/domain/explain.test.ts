import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  EXPLAIN_RULES,
  explainGroups,
  furthest,
  judge,
  type ExplainCandidate,
  type ExplainGroup,
} from './explain.js'

const CUTOFF = '2026-11-25T06:00:00.000000+00:00'
const ok: ExplainCandidate = {
  name: 'h_0000:3b:00.0',
  hostname: 'h',
  attributes: [
    { key: 'rc', value: 'PGPU' },
    { key: 'trait0', value: 'CUSTOM_A' },
    { key: 'trait1', value: 'CUSTOM_X' },
  ],
  lifecycle: 'active',
  lifecycleReason: null,
  status: 'enabled',
  health: 'ok',
  healthReason: null,
  removalPending: false,
  agentLastSeen: '2026-11-25T06:00:30.000000+00:00',
  handles: { total: 2, free: 1 },
}
const group: ExplainGroup = {
  groupId: 0,
  resourceClass: 'PGPU',
  requiredTraits: ['CUSTOM_A'],
  forbiddenTraits: ['CUSTOM_B'],
}

/** One candidate per rule, each failing that rule and every later one, so the order shows. */
const cases: [ExplainCandidate, ExplainGroup, string, string][] = [
  [
    { ...ok, attributes: [{ key: 'rc', value: 'FPGA' }], lifecycle: 'inactive' },
    group,
    'resource_class',
    'h_0000:3b:00.0 offers FPGA, the group asks for PGPU (resource_class)',
  ],
  [
    { ...ok, attributes: [{ key: 'rc', value: 'PGPU' }], status: 'maintaining' },
    group,
    'required_trait',
    'h_0000:3b:00.0 lacks CUSTOM_A, which the group requires (required_trait)',
  ],
  [
    ok,
    { ...group, forbiddenTraits: ['CUSTOM_X'] },
    'forbidden_trait',
    'CUSTOM_X is forbidden by the group (forbidden_trait), and h_0000:3b:00.0 has it',
  ],
  [
    { ...ok, lifecycle: 'inactive', status: 'maintaining', health: 'failed' },
    group,
    'lifecycle',
    'h_0000:3b:00.0 is inactive (lifecycle); mark it ready first',
  ],
  [
    { ...ok, status: 'maintaining', health: 'failed', removalPending: true },
    group,
    'status',
    'h_0000:3b:00.0 is maintaining (status); enable it first',
  ],
  [
    {
      ...ok,
      health: 'failed',
      healthReason: '2 uncorrectable ECC errors',
      agentLastSeen: '2026-11-25T05:00:00.000000+00:00',
    },
    group,
    'health',
    'h_0000:3b:00.0 is fenced (health failed: 2 uncorrectable ECC errors); it is offered again once it reports healthy',
  ],
  [
    { ...ok, agentLastSeen: '2026-11-25T05:00:00.000000+00:00', removalPending: true },
    group,
    'lease',
    "agent cyborg-agent@h silent since 2026-11-25T05:00:00.000000+00:00 (lease); h_0000:3b:00.0 is offered again after the agent's next full report",
  ],
  [
    { ...ok, removalPending: true, handles: { total: 2, free: 0 } },
    group,
    'removal_pending',
    "h_0000:3b:00.0 is pending removal (removal_pending): it vanished from its host's report and goes once freed",
  ],
  [
    { ...ok, handles: { total: 2, free: 0 } },
    group,
    'no_free_handle',
    'no free attach handle on h_0000:3b:00.0 (no_free_handle): all 2 are in use; unbind or delete a request that holds one',
  ],
  [ok, group, 'fits', 'h_0000:3b:00.0 fits, 1 free attach handle(s)'],
]

for (const [candidate, g, rule, reason] of cases) {
  void test(`rule ${rule} fires before every later one`, () => {
    assert.deepEqual(judge(candidate, g, { leaseCutoff: CUTOFF }), { rule, reason })
  })
}

void test('every rule but quota (not enforced) has a case, in EXPLAIN_RULES order', () => {
  assert.deepEqual(
    cases.map((c) => c[2]),
    EXPLAIN_RULES.filter((r) => r !== 'quota'),
  )
})

void test('a lease fence counts as lease, a vanished deployable as removal_pending', () => {
  const silent = 'agent cyborg-agent@h silent since 2026-11-25T05:00:00.000000+00:00'
  assert.equal(judge({ ...ok, health: 'unknown', healthReason: silent }, group).rule, 'lease')
  const missing = 'missing from the last inventory report'
  const gone = { ...ok, health: 'failed', healthReason: missing, removalPending: true }
  assert.equal(judge(gone, group).rule, 'removal_pending')
  // Without the removal, the same health is a health fence; without a cutoff no lease is judged.
  assert.equal(judge({ ...gone, removalPending: false }, group).rule, 'health')
  assert.equal(judge({ ...ok, agentLastSeen: '2000-01-01' }, group).rule, 'fits')
})

void test('lifecycle words: error with its reason, installing; no handles; no group', () => {
  const error = { ...ok, lifecycle: 'error', lifecycleReason: 'install failed' }
  assert.equal(
    judge(error, group).reason,
    'h_0000:3b:00.0 is in error (lifecycle): install failed; mark it ready again to retry its install',
  )
  assert.match(judge({ ...ok, lifecycle: 'installing' }, group).reason, /installing \(lifecycle\)/)
  assert.equal(
    judge({ ...ok, handles: { total: 0, free: 0 } }, group).reason,
    'h_0000:3b:00.0 has no attach handle (no_free_handle)',
  )
  const bare = { ...ok, attributes: [], handles: undefined }
  assert.deepEqual(judge(bare, undefined), { rule: 'fits', reason: 'h_0000:3b:00.0 fits' })
  assert.equal(
    judge(bare, group).reason,
    'h_0000:3b:00.0 offers no resource class, the group asks for PGPU (resource_class)',
  )
})

void test('furthest: the candidate that got furthest down the list, the first on a tie', () => {
  const j = (name: string, rule: (typeof EXPLAIN_RULES)[number]) => ({
    name,
    verdict: { rule, reason: '' },
  })
  assert.equal(furthest([]), undefined)
  const all = [j('a', 'resource_class'), j('b', 'health'), j('c', 'lifecycle'), j('d', 'health')]
  assert.equal(furthest(all)!.name, 'b')
})

void test('explainGroups: one entry per resource class of a group, traits trimmed', () => {
  assert.deepEqual(
    explainGroups([
      { 'resources:PGPU': '1', 'trait:CUSTOM_A': 'required', 'trait:CUSTOM_B': 'forbidden' },
      { 'trait:CUSTOM_C': 'required' },
    ]),
    [
      {
        groupId: 0,
        resourceClass: 'PGPU',
        requiredTraits: ['CUSTOM_A'],
        forbiddenTraits: ['CUSTOM_B'],
      },
      { groupId: 1, resourceClass: null, requiredTraits: ['CUSTOM_C'], forbiddenTraits: [] },
    ],
  )
})
