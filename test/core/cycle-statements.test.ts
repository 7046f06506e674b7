/**
 * The statements of one Nova bind cycle (create an ARQ, bind it, delete it by instance, and what
 * follows in the background: the unit's cleaning, the event relay's and the custody sealer's
 * passes), counted by Kysely's log over SQLite in-process, stay under a ceiling (issue 28: a cycle
 * cost 3× the statements of 2026-11-25's code, and each added read is CPU on every bind). Raise a
 * ceiling only with a reason written in docs/performance.md, "Statements per cycle (issue 28)".
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  DRAIN_ONLY,
  bindCycle,
  settle,
  startCountedCore,
  type CountedCore,
} from '../support/statement-count.js'

const INSTANCE = (n: number) => `0b9c0d1e-0000-4000-8000-${String(n).padStart(12, '0')}`

/**
 * Ceilings per cycle (docs/performance.md). The relay and the sealer pass only when `settle` drains
 * them (DRAIN_ONLY), so timers cannot move the counts: a cycle alone (one relay and one sealer pass
 * of its own) measured 39.3 statements and 4 COMMITs (create, bind, delete, the unit cleaned); 10
 * cycles at 2 in flight and one drain, 33.3 (their group commits share transactions as timing
 * allows: savepoints in shared ones, BEGIN and COMMIT in lone ones). Before the third pass of
 * issue 28 (docs/performance.md, "Statements per cycle, third pass"): 48.2 and 42.3.
 */
const CEILING = { statements: 41, commits: 4, twoInFlight: 36 }
const CYCLES = 6

void describe('statements per bind cycle (SQLite, in process)', { timeout: 60_000 }, () => {
  let c: CountedCore
  before(async () => {
    c = await startCountedCore('sqlite://', DRAIN_ONLY)
    await bindCycle(c, INSTANCE(0)) // warms the caches the first cycle fills
    await settle(c)
  })
  after(async () => {
    await c?.stop()
  })

  void it(`a cycle issues at most ${CEILING.statements} statements and ${CEILING.commits} COMMITs`, async () => {
    c.tally.reset()
    for (let i = 1; i <= CYCLES; i++) {
      await bindCycle(c, INSTANCE(i))
      await settle(c)
    }
    const statements = c.tally.total / CYCLES
    const commits = c.tally.commits / CYCLES
    const detail = c.tally
      .top(12)
      .map(([sql, n]) => `${(n / CYCLES).toFixed(1)} ${sql.slice(0, 100)}`)
      .join('\n')
    assert.ok(
      statements <= CEILING.statements,
      `${statements} statements per cycle; the most frequent:\n${detail}`,
    )
    assert.ok(commits <= CEILING.commits, `${commits} COMMITs per cycle`)
  })

  void it(`two cycles in flight issue at most ${CEILING.twoInFlight} statements each`, async () => {
    c.tally.reset()
    let next = 100
    await Promise.all(
      [0, 1].map(async () => {
        while (next < 110) await bindCycle(c, INSTANCE(next++))
      }),
    )
    await settle(c)
    const statements = c.tally.total / 10
    assert.ok(
      statements <= CEILING.twoInFlight,
      `${statements} statements per cycle at 2 in flight`,
    )
  })
})
