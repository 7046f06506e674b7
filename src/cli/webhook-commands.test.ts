import { test } from 'node:test'
import assert from 'node:assert/strict'
import { changesOf, listCell } from './webhook-commands.js'

const flags = { url: 'http://127.0.0.1:6666', format: 'table' as const }

test('webhook set: only what the flags change, and no contradictions', () => {
  assert.deepEqual(changesOf({ ...flags, disable: true }), { enabled: false })
  assert.deepEqual(
    changesOf({
      ...flags,
      endpoint: 'https://h/x',
      event: ['accelerator.arq.*'],
      allProjects: true,
    }),
    { url: 'https://h/x', event_types: ['accelerator.arq.*'], project_ids: [] },
  )
  assert.deepEqual(changesOf({ ...flags, allEvents: true, description: '' }), {
    event_types: [],
    description: '',
  })
  assert.throws(() => changesOf(flags), /nothing to change: give --endpoint/)
  assert.throws(() => changesOf({ ...flags, enable: true, disable: true }), /not both/)
  assert.throws(() => changesOf({ ...flags, event: ['a'], allEvents: true }), /not both/)
})

test('webhook list cells: lists comma-separated, none is all', () => {
  assert.equal(listCell(['a', 'b'], 'all'), 'a,b')
  assert.equal(listCell([], 'all'), 'all')
  assert.equal(listCell(undefined, 'all'), 'all')
})
