import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import type { PlacementRow } from '../../db/placement-rows.js'
import { applyCleaningHold, type CleaningHold } from './placement-hold.js'

const HOLD = 1000

function row(over: Partial<PlacementRow> = {}): PlacementRow {
  return {
    id: 1,
    name: 'dep',
    rpUuid: 'rp',
    numAccelerators: 16,
    placementHash: 'h',
    removalPending: false,
    held: true,
    cleaning: 0,
    reconfiguring: 0,
    inUse: 0,
    bound: 0,
    device: { uuid: 'd', hostname: 'h1', lifecycle: 'active', status: 'enabled', health: 'ok' },
    attributes: [],
    ...over,
  }
}

void describe('the cleaning hold', () => {
  void it('raises at once, then holds a lower count until the hold ends', () => {
    const holds = new Map<number, CleaningHold>()
    let out = applyCleaningHold([row({ cleaning: 3, inUse: 5, bound: 2 })], holds, 0, HOLD)
    assert.equal(out.rows[0]!.cleaning, 3)
    assert.equal(out.recheckAt, undefined)

    out = applyCleaningHold([row({ cleaning: 1, inUse: 3, bound: 2 })], holds, 400, HOLD)
    assert.equal(out.rows[0]!.cleaning, 3, 'held')
    assert.equal(out.recheckAt, 1000, 'the sync runs again when the hold ends')

    out = applyCleaningHold([row({ cleaning: 4, inUse: 6, bound: 2 })], holds, 600, HOLD)
    assert.equal(out.rows[0]!.cleaning, 4, 'a higher count is written and renews the hold')
    assert.deepEqual(holds.get(1), { count: 4, until: 1600 })

    out = applyCleaningHold([row({ cleaning: 0, inUse: 2, bound: 2 })], holds, 1600, HOLD)
    assert.equal(out.rows[0]!.cleaning, 0, 'lowered once the hold is over')
    assert.equal(holds.size, 0)
    assert.equal(out.recheckAt, undefined)
  })

  void it('a lower count still cleaning becomes the next hold', () => {
    const holds = new Map<number, CleaningHold>([[1, { count: 5, until: 100 }]])
    const out = applyCleaningHold([row({ cleaning: 2, inUse: 2 })], holds, 100, HOLD)
    assert.equal(out.rows[0]!.cleaning, 2)
    assert.deepEqual(holds.get(1), { count: 2, until: 1100 })
  })

  void it('never hides the last free unit', () => {
    // 4 units: 2 bound, none cleaning now, 2 held reserved: Placement would show 0 free, 2 are.
    const holds = new Map<number, CleaningHold>([[1, { count: 2, until: 5000 }]])
    let out = applyCleaningHold(
      [row({ numAccelerators: 4, cleaning: 0, inUse: 2, bound: 2 })],
      holds,
      10,
      HOLD,
    )
    assert.equal(out.rows[0]!.cleaning, 1, 'held as far as one unit stays free in Placement')
    assert.equal(out.recheckAt, 5000)
    // 3 bound: nothing can be held without hiding the last free unit.
    out = applyCleaningHold(
      [row({ numAccelerators: 4, cleaning: 0, inUse: 3, bound: 3 })],
      holds,
      20,
      HOLD,
    )
    assert.equal(out.rows[0]!.cleaning, 0)
    assert.equal(out.recheckAt, undefined)
  })

  void it('holds while no unit is free in the database, never over the total with the allocations', () => {
    const holds = new Map<number, CleaningHold>([[1, { count: 3, until: 5000 }]])
    // 4 units: 3 bound, 1 young clean (in use, not counted yet).
    const out = applyCleaningHold(
      [row({ numAccelerators: 4, cleaning: 0, inUse: 4, bound: 3 })],
      holds,
      10,
      HOLD,
    )
    assert.equal(out.rows[0]!.cleaning, 1)
  })

  void it('holds cleans only: units of a program or configure are shown as they are', () => {
    const holds = new Map<number, CleaningHold>()
    // 2 cleaning and 4 programming, then the program ends and 1 is still cleaning.
    applyCleaningHold([row({ cleaning: 6, reconfiguring: 4, inUse: 6 })], holds, 0, HOLD)
    assert.deepEqual(holds.get(1), { count: 2, until: 1000 })
    const out = applyCleaningHold([row({ cleaning: 1, inUse: 1 })], holds, 10, HOLD)
    assert.equal(out.rows[0]!.cleaning, 2)
  })

  void it('a hold of 0 passes the rows through and forgets every hold', () => {
    const holds = new Map<number, CleaningHold>([[1, { count: 3, until: 5000 }]])
    const rows = [row({ cleaning: 1, inUse: 1 })]
    const out = applyCleaningHold(rows, holds, 10, 0)
    assert.equal(out.rows[0], rows[0])
    assert.equal(holds.size, 0)
  })

  void it('over any sequence: never below the live count, never over the units, never hiding the last free one', () => {
    const step = fc.record({
      bound: fc.nat(8),
      cleaning: fc.nat(8),
      young: fc.nat(8),
      dt: fc.nat(700),
    })
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const holds = new Map<number, CleaningHold>()
        let now = 0
        for (const st of steps) {
          now += st.dt
          const num = 8
          const bound = Math.min(st.bound, num)
          const cleaning = Math.min(st.cleaning, num - bound)
          const young = Math.min(st.young, num - bound - cleaning)
          const live = row({
            numAccelerators: num,
            bound,
            cleaning,
            inUse: bound + cleaning + young,
          })
          const shown = applyCleaningHold([live], holds, now, HOLD).rows[0]!.cleaning
          assert.ok(shown >= cleaning)
          if (shown > cleaning) {
            assert.ok(shown + bound <= num, 'reserved and allocated never over the total')
            if (num - live.inUse > 0) assert.ok(num - shown - bound >= 1, 'one unit left free')
          }
        }
      }),
    )
  })
})
