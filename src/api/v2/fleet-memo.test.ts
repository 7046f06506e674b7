/**
 * Kept answers (fleet-memo.ts): the same read, question and lease verdicts give the same bytes
 * without computing again; a cut-off past another agent's beat, another question or another read
 * computes anew.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { keptAnswer, rankOf } from './fleet-memo.js'

void test('lease rank: how many beats are before the cut-off', () => {
  const beats = ['2026-01-01', '2026-01-02', '2026-01-03']
  assert.deepEqual(
    ['2025-12-31', '2026-01-01', '2026-01-01T1', '2026-01-03', '2027'].map((c) => rankOf(beats, c)),
    [0, 0, 1, 2, 3],
  )
})

void test('kept answers: reused for the same read, question and lease verdicts only', () => {
  let computed = 0
  const read = [{ beat: '2026-01-02' }, { beat: null }]
  const ask = (r: object, question: string, leaseCutoff: string) =>
    keptAnswer({
      read: r,
      beats: () => read.map((d) => d.beat),
      question,
      leaseCutoff,
      compute: () => `answer ${++computed}`,
    }).toString()
  assert.equal(ask(read, 'q', '2026-01-01'), 'answer 1')
  assert.equal(ask(read, 'q', '2026-01-01T12'), 'answer 1')
  assert.equal(ask(read, 'q', '2026-01-02T00'), 'answer 2')
  assert.equal(ask(read, 'other', '2026-01-02T00'), 'answer 3')
  assert.equal(ask([...read], 'q', '2026-01-02T00'), 'answer 4')
})
