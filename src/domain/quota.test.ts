/** Quota's pure parts: resource names, the over-limit judgement, its 403, and the explain rule. */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { judge, type ExplainCandidate } from './explain.js'
import {
  overQuota,
  quotaExceeded,
  quotaReason,
  quotaResource,
  quotaRows,
  standingOf,
} from './quota.js'

const limits = new Map([
  ['class:FPGA', 2],
  ['class:PGPU', 0],
  ['servers', 10],
])

await test('resource classes are named as Nova names them', () => {
  assert.equal(quotaResource('FPGA'), 'class:FPGA')
  assert.equal(quotaResource('CUSTOM_ACCEL_X'), 'class:CUSTOM_ACCEL_X')
})

await test('over a limit only past it; a class without a limit is unlimited', () => {
  assert.equal(overQuota('p', limits, new Map([['FPGA', 2]])), undefined)
  assert.deepEqual(overQuota('p', limits, new Map([['FPGA', 3]])), {
    projectId: 'p',
    resource: 'class:FPGA',
    limit: 2,
    inUse: 3,
  })
  assert.equal(overQuota('p', limits, new Map([['NIC', 999]])), undefined)
  assert.equal(overQuota('p', limits, new Map([['PGPU', 1]]))?.resource, 'class:PGPU')
})

await test('the 403 names the resource, the limit, the usage before and the request', () => {
  const err = quotaExceeded({ projectId: 'p', resource: 'class:FPGA', limit: 2, inUse: 3 }, 1)
  assert.equal(err.code, 'OVER_QUOTA')
  assert.equal(err.name, 'ForbiddenError')
  assert.equal(
    err.message,
    'Quota exceeded for class:FPGA in project p: limit 2, in use 2, requested 1',
  )
})

await test('explain rules a candidate out by quota after removal_pending, before no_free_handle', () => {
  const c: ExplainCandidate = {
    name: 'fpga0',
    hostname: 'h',
    attributes: [{ key: 'rc', value: 'FPGA' }],
    lifecycle: 'active',
    lifecycleReason: null,
    status: 'enabled',
    health: 'ok',
    healthReason: null,
    removalPending: false,
    agentLastSeen: null,
    handles: { total: 1, free: 0 },
  }
  const full = standingOf('p', limits, new Map([['FPGA', 2]]))
  const room = standingOf('p', limits, new Map([['FPGA', 1]]))
  assert.deepEqual(judge(c, undefined, { quota: full }), {
    rule: 'quota',
    reason:
      'project p has 2 of its 2 class:FPGA in use (quota); release one or ask for a higher limit',
  })
  assert.equal(judge(c, undefined, { quota: room }).rule, 'no_free_handle')
  assert.equal(
    judge({ ...c, removalPending: true }, undefined, { quota: full }).rule,
    'removal_pending',
  )
  assert.equal(
    quotaReason({ projectId: 'p', resource: 'class:FPGA', limit: 2, inUse: 1 }),
    undefined,
  )
})

await test('quota rows: every limited or used resource, by name', () => {
  assert.deepEqual(
    quotaRows(
      limits,
      new Map([
        ['FPGA', 1],
        ['NIC', 2],
      ]),
    ),
    [
      { resource: 'class:FPGA', limit: 2, inUse: 1 },
      { resource: 'class:NIC', limit: null, inUse: 2 },
      { resource: 'class:PGPU', limit: 0, inUse: 0 },
      { resource: 'servers', limit: 10, inUse: 0 },
    ],
  )
})
