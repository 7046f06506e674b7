/**
 * `cleanUnits` (clean-batch.ts) over a `cleanUnit` that the test settles: one entry per unit, in
 * order, a failure being its entry; a unit still cleaning after the grace is CLEAN_RUNNING; a list
 * that is empty, too long or not a list is refused naming `units`.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { InvalidInputError, NotFoundError } from '../domain/errors.js'
import type { CleanUnitResult } from '../rpc/agent-rpc.js'
import { MAX_CLEAN_UNITS } from '../rpc/clean-units.js'
import { cleanBatch } from './clean-batch.js'

const result = (driver: string): CleanUnitResult => ({
  driver,
  policy: 'auto',
  method: 'reset',
  evidenceSha256: '0'.repeat(64),
  durationMs: 1,
})

describe('cleanUnits', () => {
  it('one entry per unit, in order; a failure is its entry, not the message’s', async () => {
    const cleanUnit = async (raw: unknown) => {
      const unit = raw as { name: string }
      if (unit.name === 'b') throw new NotFoundError('no such unit', { code: 'UNIT_NOT_ON_HOST' })
      return result(unit.name)
    }
    const answer = await cleanBatch(
      { cleanUnit, batchGraceMs: 1000 },
      {
        units: [{ name: 'a' }, { name: 'b' }, { name: 'c' }],
      },
    )
    assert.deepEqual(
      answer.results.map((r) => (r.ok ? r.result.driver : r.error.code)),
      ['a', 'UNIT_NOT_ON_HOST', 'c'],
    )
  })

  it('a unit still cleaning once the grace after the first is over is answered CLEAN_RUNNING', async () => {
    let release = () => {}
    const slow = new Promise<void>((r) => (release = r))
    const cleanUnit = async (raw: unknown) => {
      if ((raw as { name: string }).name === 'slow') await slow
      return result((raw as { name: string }).name)
    }
    const answer = await cleanBatch(
      { cleanUnit, batchGraceMs: 5 },
      {
        units: [{ name: 'fast' }, { name: 'slow' }],
      },
    )
    release()
    assert.equal(answer.results[0]!.ok, true)
    const second = answer.results[1]!
    assert.ok(!second.ok && second.error.code === 'CLEAN_RUNNING')
  })

  it('refuses a list that is empty, too long or not a list, naming units', async () => {
    const cleanUnit = async () => result('x')
    for (const raw of [
      {},
      { units: [] },
      { units: 'a' },
      null,
      { units: Array(MAX_CLEAN_UNITS + 1).fill({}) },
    ])
      await assert.rejects(
        cleanBatch({ cleanUnit, batchGraceMs: 5 }, raw),
        (err: unknown) =>
          err instanceof InvalidInputError && (err.details as { field: string }).field === 'units',
      )
  })
})
