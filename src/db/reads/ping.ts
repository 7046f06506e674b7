/**
 * The API's /healthcheck read (src/api/healthcheck.ts): one indexed query that proves the database
 * answers and tells whether a conductor beat recently.
 */
import type { ReadDb } from '../core/connection.js'

/** The binary name under which conductors heartbeat (src/main/heartbeat.ts beats with it). */
export const CONDUCTOR_BINARY = 'cyborg-conductor'

/** The conductors' heartbeats, summed up. */
export interface ConductorBeats {
  /** Conductors that ever beat (rows of the services table). */
  known: number
  /** Of those, how many beat at or after the cutoff. */
  up: number
  /** The newest beat of any conductor; null when none ever beat. */
  latest: string | null
}

/**
 * Counts the conductors that beat at or after `cutoff` (a stored timestamp, formatTimestamp), in
 * one statement over `services_lease_idx` (binary, last_seen). Any answer means the database is up.
 */
export async function getConductorBeats(db: ReadDb, cutoff: string): Promise<ConductorBeats> {
  const row = await db
    .selectFrom('services')
    .select((eb) => [
      eb.fn.countAll().as('known'),
      eb.fn.sum(eb.case().when('last_seen', '>=', cutoff).then(1).else(0).end()).as('up'),
      eb.fn.max('last_seen').as('latest'),
    ])
    .where('binary', '=', CONDUCTOR_BINARY)
    .executeTakeFirstOrThrow()
  // PostgreSQL and MariaDB return COUNT and SUM as strings (bigint, decimal); SUM of no rows is null.
  return { known: Number(row.known), up: Number(row.up ?? 0), latest: row.latest ?? null }
}
