import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import {
  ARQ_STATES,
  ARQ_TRANSITIONS,
  allowedFrom,
  canTransition,
  expandProfileGroups,
  isArqState,
  isResolved,
  type ArqState,
} from './arq.js'
import { InvalidInputError } from './errors.js'

const state = fc.constantFrom(...ARQ_STATES)

/** States reachable from `start` through the table. */
function reachable(start: ArqState): Set<ArqState> {
  const seen = new Set<ArqState>([start])
  for (const queue = [start]; queue.length > 0;) {
    const from = queue.shift()!
    for (const to of ARQ_STATES) {
      if (canTransition(from, to) && !seen.has(to)) {
        seen.add(to)
        queue.push(to)
      }
    }
  }
  return seen
}

test('the transition table names only known states, has no self-loops and nothing enters Initial', () => {
  assert.deepEqual(Object.keys(ARQ_TRANSITIONS).sort(), [...ARQ_STATES].sort())
  for (const to of ARQ_STATES) {
    for (const from of allowedFrom(to)) assert.ok(isArqState(from), `${from} → ${to}`)
    assert.ok(!allowedFrom(to).includes(to), `self-loop on ${to}`)
  }
  assert.deepEqual(allowedFrom('Initial'), [])
  assert.equal(isArqState('Bogus'), false)
})

test('Cyborg rows are kept and the documented decisions hold', () => {
  assert.deepEqual([...allowedFrom('BindStarted')].sort(), ['Initial', 'Unbound'])
  assert.deepEqual(allowedFrom('Bound'), ['BindStarted'])
  assert.deepEqual([...allowedFrom('BindFailed')].sort(), ['BindStarted', 'Bound'])
  assert.ok(canTransition('UnbindFailed', 'Unbound'))
  assert.ok(!canTransition('UnbindFailed', 'Deleting'))
  assert.ok(!canTransition('Initial', 'UnbindFailed'))
  assert.ok(!canTransition('Deleting', 'Unbound'), 'Deleting is final')
})

test('canTransition agrees with allowedFrom for every pair', () => {
  fc.assert(
    fc.property(
      state,
      state,
      (from, to) => canTransition(from, to) === allowedFrom(to).includes(from),
    ),
  )
})

test('every state is reachable from Initial, and every live state can still be deleted', () => {
  assert.deepEqual([...reachable('Initial')].sort(), [...ARQ_STATES].sort())
  for (const s of ARQ_STATES)
    assert.ok(reachable(s).has('Deleting') || s === 'Deleting', `${s} cannot reach Deleting`)
})

test('a machine driven by random requests moves only along listed edges', () => {
  fc.assert(
    fc.property(fc.array(state, { maxLength: 60 }), (requests) => {
      let current: ArqState = 'Initial'
      const visited = new Set<ArqState>([current])
      for (const to of requests) {
        if (!canTransition(current, to)) continue
        assert.ok(ARQ_TRANSITIONS[to].includes(current))
        current = to
        visited.add(current)
      }
      for (const s of visited) assert.ok(reachable('Initial').has(s))
      // Deleting is a sink: once there, nothing else was entered.
      if (visited.has('Deleting')) assert.equal(current, 'Deleting')
    }),
  )
})

test('isResolved is Nova’s set: Bound, BindFailed, Deleting', () => {
  assert.deepEqual(ARQ_STATES.filter(isResolved), ['Bound', 'BindFailed', 'Deleting'])
})

test('expandProfileGroups: one spec per unit, with the group’s traits and accel keys', () => {
  const specs = expandProfileGroups(
    [
      {
        'resources:FPGA': '2',
        'trait:CUSTOM_A': 'required',
        'trait:CUSTOM_B': 'forbidden',
        'accel:bitstream_id': 'b1',
      },
      { 'resources:GPU': '1', 'resources:CUSTOM_X': '1', 'accel:function_id': 'f' },
    ],
    10,
  )
  assert.equal(specs.length, 4)
  assert.deepEqual(specs[0], {
    groupId: 0,
    resourceClass: 'FPGA',
    requiredTraits: ['CUSTOM_A'],
    forbiddenTraits: ['CUSTOM_B'],
    accel: { bitstream_id: 'b1' },
  })
  assert.notEqual(specs[0]!.requiredTraits, specs[1]!.requiredTraits, 'specs share no arrays')
  assert.deepEqual(
    specs.map((s) => [s.groupId, s.resourceClass, s.accel]),
    [
      [0, 'FPGA', { bitstream_id: 'b1' }],
      [0, 'FPGA', { bitstream_id: 'b1' }],
      [1, 'GPU', { function_id: 'f' }],
      [1, 'CUSTOM_X', { function_id: 'f' }],
    ],
  )
})

test('expandProfileGroups: the count is the sum of the amounts, group ids ascend', () => {
  const group = fc.dictionary(
    fc.constantFrom('resources:FPGA', 'resources:GPU', 'resources:CUSTOM_Z'),
    fc.integer({ min: 1, max: 5 }).map(String),
    { minKeys: 1 },
  )
  fc.assert(
    fc.property(fc.array(group, { minLength: 1, maxLength: 5 }), (groups) => {
      const total = groups.flatMap((g) => Object.values(g)).reduce((a, v) => a + Number(v), 0)
      const specs = expandProfileGroups(groups, 1000)
      assert.equal(specs.length, total)
      assert.deepEqual(
        specs.map((s) => s.groupId),
        [...specs.map((s) => s.groupId)].sort((a, b) => a - b),
      )
      assert.throws(() => expandProfileGroups(groups, total - 1), InvalidInputError)
    }),
  )
})

test('expandProfileGroups: bad amounts, bad trait values and totals over the limit name the field', () => {
  for (const bad of ['0', '-1', '1.5', 'x', '', '1e3']) {
    assert.throws(
      () => expandProfileGroups([{ 'resources:GPU': '1' }, { 'resources:FPGA': bad }], 10),
      (err: unknown) => {
        assert.ok(err instanceof InvalidInputError)
        assert.equal(err.details?.field, 'groups[1].resources:FPGA')
        assert.match(err.message, /groups\[1\]\.resources:FPGA/)
        return true
      },
    )
  }
  assert.throws(
    () => expandProfileGroups([{ 'resources:GPU': '1', 'trait:CUSTOM_A': 'maybe' }], 10),
    {
      details: { field: 'groups[0].trait:CUSTOM_A' },
    },
  )
  assert.throws(
    () => expandProfileGroups([{ 'resources:GPU': '3' }, { 'resources:FPGA': '2147483647' }], 4),
    (err: unknown) => {
      assert.ok(err instanceof InvalidInputError)
      assert.deepEqual(err.details, { field: 'groups[1].resources:FPGA', limit: 4 })
      assert.match(err.message, /more than 4/)
      return true
    },
  )
  assert.equal(expandProfileGroups([{ 'resources:GPU': '4' }], 4).length, 4)
  assert.deepEqual(expandProfileGroups([{ 'trait:CUSTOM_A': 'required' }], 4), [])
})
