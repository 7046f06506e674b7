/**
 * The pure parts of the Requests and Explain pages (web/requests/requests-data.ts,
 * web/explain/explain-data.ts), without a browser: counts, filters, pages, marks and titles.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  applyFilter,
  countByState,
  filterOf,
  PAGE_SIZE,
  pageOf,
  stateMark,
  valuesOf,
  type Arq,
} from '../../web/requests/requests-data.js'
import { groupTitle, verdictMark } from '../../web/explain/explain-data.js'

const arq = (n: number, over: Partial<Arq>): Arq => ({
  uuid: `aaaaaaaa-0000-4000-8000-${String(n).padStart(12, '0')}`,
  state: 'Initial',
  device_profile_name: 'dp',
  device_profile_group_id: 0,
  hostname: null,
  device_rp_uuid: null,
  instance_uuid: null,
  project_id: 'p1',
  attach_handle_type: '',
  attach_handle_uuid: null,
  attach_handle_info: {},
  created_at: '2026-01-01T00:00:00',
  updated_at: null,
  ...over,
})

const ARQS = [
  arq(1, { state: 'Bound', hostname: 'h1', instance_uuid: 'bbbbbbbb-1', project_id: 'p1' }),
  arq(2, { state: 'BindFailed', hostname: 'h2', instance_uuid: 'cccccccc-2', project_id: 'p2' }),
  arq(3, {}),
]

void describe('the Requests page’s data', () => {
  it('counts every known state, zero included, in the state machine’s order', () => {
    const counts = countByState([...ARQS, arq(4, { state: 'Mystery' })])
    assert.deepEqual(counts.slice(0, 4), [
      ['Initial', 1],
      ['BindStarted', 0],
      ['Bound', 1],
      ['BindFailed', 1],
    ])
    assert.deepEqual(counts.at(-1), ['Mystery', 1])
  })

  it('filters by state, project, host and an instance’s start, from the URL’s query', () => {
    const f = (q: string) => applyFilter(ARQS, filterOf(new URLSearchParams(q))).map((a) => a.uuid)
    assert.deepEqual(
      f(''),
      ARQS.map((a) => a.uuid),
    )
    assert.deepEqual(f('state=BindFailed'), [ARQS[1]!.uuid])
    assert.deepEqual(f('project=p1'), [ARQS[0]!.uuid, ARQS[2]!.uuid])
    assert.deepEqual(f('host=h1'), [ARQS[0]!.uuid])
    assert.deepEqual(f('instance=CCCC'), [ARQS[1]!.uuid])
    assert.deepEqual(f('state=Bound&host=h2'), [])
    assert.deepEqual(
      f('state=&host=%20'),
      ARQS.map((a) => a.uuid),
    )
  })

  it('offers the distinct projects and hosts, sorted, no empty one', () => {
    assert.deepEqual(valuesOf(ARQS, 'hostname'), ['h1', 'h2'])
    assert.deepEqual(valuesOf(ARQS, 'project_id'), ['p1', 'p2'])
  })

  it('pages rows, clamping a page past either end', () => {
    const rows = Array.from({ length: PAGE_SIZE * 2 + 1 }, (_, i) => i)
    assert.deepEqual(pageOf(rows, 1).rows, rows.slice(0, PAGE_SIZE))
    assert.equal(pageOf(rows, 3).rows.length, 1)
    assert.equal(pageOf(rows, 99).page, 3)
    assert.equal(pageOf(rows, Number('x')).page, 1)
    assert.deepEqual(pageOf([], 1), { rows: [], page: 1, pages: 1 })
  })

  it('marks failed states with ✕ and Bound with ✓, not colour alone', () => {
    assert.equal(stateMark('BindFailed').icon, '✕')
    assert.equal(stateMark('UnbindFailed').icon, '✕')
    assert.equal(stateMark('Bound').icon, '✓')
    assert.equal(stateMark('Initial').tone, '')
  })
})

void describe('the Explain page’s data', () => {
  it('names a verdict and a group in words', () => {
    assert.deepEqual(verdictMark('fits'), { icon: '✓', word: 'fits', tone: 'ok' })
    assert.deepEqual(verdictMark('no_free_handle'), {
      icon: '✕',
      word: 'no free handle',
      tone: 'bad',
    })
    const g = {
      group_id: 1,
      resource_class: null,
      required_traits: ['CUSTOM_A'],
      forbidden_traits: ['CUSTOM_X'],
      fits: 0,
      candidates: [],
    }
    assert.equal(groupTitle(g), 'Group 1: any resource class; requires CUSTOM_A; forbids CUSTOM_X')
  })
})
