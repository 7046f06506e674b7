import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { formatTimestamp, parseRfc3339 } from './time.js'

const at = (text: string) => {
  const r = parseRfc3339(text)
  return r instanceof Date ? formatTimestamp(r) : `! ${r.problem}`
}

void describe('parseRfc3339', () => {
  void it('takes RFC 3339 date-times with their offset, and full-dates as midnight UTC', () => {
    assert.equal(at('2026-01-31T12:00:00Z'), '2026-01-31T12:00:00.000000+00:00')
    assert.equal(at('2026-01-31t12:00:00.25+02:30'), '2026-01-31T09:30:00.250000+00:00')
    assert.equal(at('2026-01-01T00:00:00-01:00'), '2026-01-01T01:00:00.000000+00:00')
    assert.equal(at('2024-02-29'), '2024-02-29T00:00:00.000000+00:00')
    assert.equal(at('0050-06-01T00:00:00Z'), '0050-06-01T00:00:00.000000+00:00')
  })

  void it('refuses what no calendar has, and what is not RFC 3339', () => {
    for (const [text, problem] of [
      ['2026-13-45', /no month 13/],
      ['2026-00-01', /no month 00/],
      ['2023-02-29', /no day 29/],
      ['2026-04-31', /no day 31/],
      ['2026-01-01T24:00:00Z', /no time of day/],
      ['2026-01-01T23:60:00Z', /no time of day/],
      ['2026-12-31T23:59:60Z', /no time of day/],
      ['2026-01-01T00:00:00+24:00', /no offset/],
      ['9999-12-31T23:59:59-01:00', /out of range/],
      ['9999-99-99T99:99:99', /RFC 3339/],
      ['2026-01-01T::::', /RFC 3339/],
      ['2026-01-01T10:00:00', /offset/],
      ['2026-1-1', /RFC 3339/],
      ['yesterday', /RFC 3339/],
      ['', /RFC 3339/],
    ] as const)
      assert.match(at(text), problem, text)
  })
})
