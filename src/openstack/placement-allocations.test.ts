/**
 * The pure halves of the Placement allocation calls (placement-allocations.ts): the query string of
 * `GET /allocation_candidates` (forbidden traits as `!TRAIT` in `required`) and the trimmed answer.
 * The calls themselves run against real Placement in test/placement/.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { candidatesQuery, trimCandidates } from './placement-allocations.js'

describe('Placement allocation candidates', () => {
  it('builds resources, required with forbidden traits, and limit', () => {
    const q = new URLSearchParams(
      candidatesQuery({
        resources: { FPGA: 1, CUSTOM_X: 2 },
        required: ['CUSTOM_A'],
        forbidden: ['CUSTOM_B'],
        limit: 5,
      }),
    )
    assert.equal(q.get('resources'), 'FPGA:1,CUSTOM_X:2')
    assert.equal(q.get('required'), 'CUSTOM_A,!CUSTOM_B')
    assert.equal(q.get('limit'), '5')
    const bare = new URLSearchParams(candidatesQuery({ resources: { PGPU: 1 } }))
    assert.deepEqual([...bare.keys()], ['resources'])
  })

  it('trims the answer: summaries, providers per resource class (each once), request count', () => {
    const trimmed = trimCandidates({
      allocation_requests: [
        { allocations: { rp1: { resources: { FPGA: 1 } }, cn: { resources: { VCPU: 1 } } } },
        { allocations: { rp2: { resources: { FPGA: 1 } }, cn: { resources: { VCPU: 1 } } } },
      ],
      provider_summaries: { rp1: {}, rp2: {}, cn: {} },
    })
    assert.deepEqual(trimmed, {
      summaries: ['rp1', 'rp2', 'cn'],
      allocated: { FPGA: ['rp1', 'rp2'], VCPU: ['cn'] },
      requests: 2,
    })
    assert.deepEqual(trimCandidates({ allocation_requests: [], provider_summaries: {} }), {
      summaries: [],
      allocated: {},
      requests: 0,
    })
  })
})
