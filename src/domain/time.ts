/** An injectable clock, so that tests are deterministic. */
export interface Clock {
  now(): Date
}

export const systemClock: Clock = { now: () => new Date() }

/**
 * The timestamp format stored in every `created_at`/`updated_at` column and returned by the API:
 * ISO-8601 UTC with microseconds and an explicit offset, as OpenStack Cyborg renders it
 * (`2019-10-25T12:01:05.896000+00:00`). Fixed width, so it sorts as text on every database.
 */
export function formatTimestamp(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000+00:00')
}

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(?:([Zz])|([+-])(\d{2}):(\d{2})))?$/

/**
 * A time as RFC 3339 writes it (§5.6): `2026-01-31T12:00:00Z`, `…T12:00:00.5+02:00`, or a bare
 * full-date `2026-01-31` (midnight UTC). Every field is checked against the calendar (month 1–12,
 * the month's days with leap years, hour 0–23, minute and second 0–59, offset up to ±23:59); a
 * date-time needs its offset (`Z` or `±hh:mm`). A leap second (`:60`) is refused: JavaScript
 * time has none. Returns the instant, or why the text is not one (for the 400's message).
 */
export function parseRfc3339(text: string): Date | { problem: string } {
  const m = RFC3339.exec(text)
  if (!m) {
    return {
      problem:
        'must be an RFC 3339 time such as 2026-01-31T12:00:00Z or 2026-01-31 (a date-time needs Z or an offset ±hh:mm)',
    }
  }
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map((v) => Number(v ?? 0)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ]
  if (month < 1 || month > 12) return { problem: `has no month ${m[2]}` }
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  const days = month === 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31
  if (day < 1 || day > days) return { problem: `has no day ${m[3]} in ${m[1]}-${m[2]}` }
  if (hour > 23 || minute > 59 || second > 59)
    return { problem: `has no time of day ${m[4]}:${m[5]}:${m[6]}` }
  const sign = m[9]
  if (sign !== undefined && (Number(m[10]) > 23 || Number(m[11]) > 59))
    return { problem: `has no offset ${sign}${m[10]}:${m[11]}` }
  const offsetMs =
    sign === undefined ? 0 : (sign === '-' ? -1 : 1) * (Number(m[10]) * 60 + Number(m[11])) * 60_000
  const at = new Date(Date.UTC(2000, month - 1, day, hour, minute, second))
  // Date.UTC maps years 0–99 to 1900–1999: the year is set on its own.
  at.setUTCFullYear(year)
  const ms = Math.floor(Number(`0${m[7] ?? ''}`) * 1000)
  const out = new Date(at.getTime() + ms - offsetMs)
  const utcYear = out.getUTCFullYear()
  if (utcYear < 0 || utcYear > 9999)
    return { problem: 'is out of range (years 0000 to 9999 in UTC)' }
  return out
}
