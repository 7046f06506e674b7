import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { ConductorRpc } from '../../rpc/conductor-rpc.js'
import { comparePlacement, DIAGNOSE_LIMIT, type PlacementCandidate } from './explain-placement.js'

const rp = (i: number) => `c0ffee00-0000-4000-8000-${String(i).padStart(12, '0')}`
const group = { groupId: 0, resourceClass: 'FPGA', requiredTraits: [], forbiddenTraits: [] }

void describe('comparePlacement', () => {
  void it(`diagnoses at most ${DIAGNOSE_LIMIT} disagreeing providers, in one call, and says so`, async () => {
    const asked: unknown[] = []
    const conductor = {
      placementExplain: async (req: { providers?: string[] }) => {
        asked.push(req)
        if (!req.providers)
          return { configured: true, groups: [{ offered: [], truncated: false }], providers: {} }
        return {
          configured: true,
          groups: [],
          providers: Object.fromEntries(req.providers.map((p) => [p, null])),
        }
      },
    } as unknown as ConductorRpc
    const candidates: PlacementCandidate[] = Array.from({ length: 25 }, (_, i) => ({
      deployable_uuid: `d${i}`,
      rule: 'fits',
      free_units: 1,
    }))
    const facts = new Map(
      candidates.map((c, i) => [
        c.deployable_uuid,
        { rpUuid: rp(i), traits: [], handles: { total: 1, free: 1 } },
      ]),
    )
    const summary = await comparePlacement(conductor, [group], [1], [candidates], facts)
    assert.equal(asked.length, 2)
    assert.equal((asked[1] as { providers: string[] }).providers.length, DIAGNOSE_LIMIT)
    assert.deepEqual(summary, {
      configured: true,
      note: `5 of 25 disagreeing providers were not diagnosed (at most ${DIAGNOSE_LIMIT} per request)`,
    })
    assert.ok(candidates.every((c) => c.placement === 'not_offered'))
    const reasons = candidates.map((c) => c.placement_reason)
    assert.equal(reasons.filter((r) => r !== null).length, DIAGNOSE_LIMIT)
    assert.equal(reasons[0], 'Placement has no resource provider for this deployable (provider)')
    assert.equal(reasons[24], null)
  })
})
