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
