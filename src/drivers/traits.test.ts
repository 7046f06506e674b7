import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { isValidTrait, rcAndTraits, traitSegment, vendorTraitName } from './traits.js'

void describe('trait helpers', () => {
  void it('accepts only what Placement accepts', () => {
    assert.ok(isValidTrait('CUSTOM_NVIDIA_1EB8'))
    assert.ok(isValidTrait('OWNER_CYBORG'))
    for (const bad of ['', 'custom_x', 'CUSTOM-X', 'CUSTOM X', 'CUSTOM_É', 'C'.repeat(256)])
      assert.ok(!isValidTrait(bad), bad)
    assert.ok(isValidTrait('C'.repeat(255)))
  })

  void it('makes trait segments from free text', () => {
    assert.equal(traitSegment('A100-4C'), 'A100_4C')
    assert.equal(traitSegment('  grid t4--16q '), 'GRID_T4_16Q')
    assert.equal(traitSegment('---'), '')
    assert.equal(traitSegment('nvidia-471'), 'NVIDIA_471')
  })

  void it('names known vendors, else uses the upper-case hex id', () => {
    assert.equal(vendorTraitName('10de'), 'NVIDIA')
    assert.equal(vendorTraitName('8086'), 'INTEL')
    assert.equal(vendorTraitName('10EE'), 'XILINX')
    assert.equal(vendorTraitName('15b3'), 'MELLANOX')
    assert.equal(vendorTraitName('1d0f'), '1D0F')
  })

  void it('builds rc + trait0.. attributes, dropping invalid and duplicate traits', () => {
    assert.deepEqual(
      rcAndTraits('PGPU', ['OWNER_CYBORG', 'bad trait', 'CUSTOM_A', 'OWNER_CYBORG']),
      [
        { key: 'rc', value: 'PGPU' },
        { key: 'trait0', value: 'OWNER_CYBORG' },
        { key: 'trait1', value: 'CUSTOM_A' },
      ],
    )
  })
})
