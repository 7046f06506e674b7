import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { whyNotOffered, whyOffered, type PlacementProviderView } from './placement-explain.js'

const group = {
  resourceClass: 'FPGA',
  amount: 1,
  requiredTraits: ['CUSTOM_A'],
  forbiddenTraits: ['CUSTOM_X'],
}
const inv = { total: 2, reserved: 0, max_unit: 2, min_unit: 1, step_size: 1, allocation_ratio: 1 }
const view = (over: Partial<PlacementProviderView> = {}): PlacementProviderView => ({
  inventories: { FPGA: inv },
  usages: { FPGA: 0 },
  traits: ['CUSTOM_A'],
  ...over,
})

void describe('whyNotOffered', () => {
  void it('names the first difference in Placement', () => {
    assert.equal(
      whyNotOffered(view({ inventories: {} }), group, false),
      'Placement has no FPGA inventory on this provider (inventory)',
    )
    assert.equal(
      whyNotOffered(view({ traits: ['CUSTOM_A', 'CUSTOM_X'] }), group, false),
      'Placement has trait CUSTOM_X on this provider, which the group forbids (traits)',
    )
    assert.equal(
      whyNotOffered(view({ usages: { FPGA: 2 } }), group, false),
      'Placement has FPGA total 2, reserved 0, used 2 on this provider, the group asks for 1 (usage)',
    )
    assert.match(whyNotOffered(view(), { ...group, amount: 3 }, false), /\(usage\)$/)
    assert.match(
      whyNotOffered(
        view({ inventories: { FPGA: { ...inv, total: 4, max_unit: 1 } } }),
        { ...group, amount: 2 },
        false,
      ),
      /in units of 1 to 1, step 1, .* asks for 2 \(inventory units\)$/,
    )
    assert.match(whyNotOffered(view(), group, true), /\(limit\)$/)
    assert.match(whyNotOffered(view(), group, false), /\(unexplained\)$/)
  })
})

void describe('whyOffered', () => {
  const side = { traits: ['CUSTOM_A'], handles: { total: 2, free: 0 } }
  void it("names Cyborg's records, or the expected difference", () => {
    assert.equal(
      whyOffered({ ...side, rule: 'required_trait', traits: [] }, group),
      "Placement has trait CUSTOM_A on this provider, Cyborg's attributes lack it (traits)",
    )
    assert.equal(whyOffered({ ...side, rule: 'no_free_handle' }, group), undefined)
    assert.equal(
      whyOffered({ ...side, rule: 'no_free_handle' }, group, view()),
      'Placement has FPGA total 2, reserved 0, used 0 on this provider, while Cyborg has 2 of 2 attach handle(s) in use (usage)',
    )
    assert.match(
      whyOffered({ ...side, rule: 'lease' }, group)!,
      /lease is Cyborg's own rule.*expected/,
    )
  })
})
