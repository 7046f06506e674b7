/**
 * Services: one row per (host, binary) with its heartbeat, plus the agent's last accepted report hash.
 * Writes and the conductor's reads; the API's list (listServices) is src/db/reads/service-reads.ts.
 */
import type { Kysely } from 'kysely'
import type { ReadDb } from './core/connection.js'
import { isUniqueViolation } from './core/errors.js'
import type { Database } from './core/schema.js'
import { AGENT_BINARY } from './reads/service-reads.js'

// The agents' binary name lives with the reads (src/db/reads/service-reads.ts); writers name it here too.
export { AGENT_BINARY }

/**
 * Records a heartbeat: creates the service row on first sight, else refreshes version and last_seen.
 * With `reportHash`, first tries one UPDATE that also checks the stored report hash: true when it
 * matched (the common case of an unchanged inventory: one statement in all).
 */
export async function updateHeartbeat(
  db: Kysely<Database>,
  service: { host: string; binary: string; version: string },
  now: string,
  reportHash?: string,
): Promise<boolean> {
  const { host, binary, version } = service
  const changes = { version, last_seen: now, updated_at: now }
  if (reportHash !== undefined) {
    const matched = await db
      .updateTable('services')
      .set(changes)
      .where('host', '=', host)
      .where('binary', '=', binary)
      .where('report_hash', '=', reportHash)
      .executeTakeFirst()
    if (Number(matched.numUpdatedRows) > 0) return true
  }
  await upsert(db, host, binary, changes, { version, report_hash: null })
  return false
}

/** One heartbeat of a coalesced batch (updateHeartbeats). */
export interface Beat {
  host: string
  binary: string
  version: string
  /** The agent's inventory hash, to be confirmed against the stored one. */
  reportHash?: string
}

/** Beats per statement at most: SQLite nests one OR per beat and allows an expression depth of 1000. */
export const MAX_BEATS_PER_STATEMENT = 256

/**
 * Many heartbeats in one statement (the conductor's coalescing, src/conductor/heartbeat-batch.ts):
 * one `UPDATE services SET last_seen, updated_at WHERE binary = ? AND host IN (…) AND (…)` per
 * binary, refreshing each beat's row only when it exists with the beat's version and, for a beat
 * with a report hash, that very hash (checked in the same statement, so a hash nulled by a
 * concurrent lease sweep makes the row miss). When every row matched (the steady state), that is
 * all; otherwise one SELECT finds which did.
 *
 * Resolves, per beat, true when its row now holds exactly the beat (last_seen = `now`, its version,
 * its hash): the heartbeat is recorded and its hash is current. False means unsettled (first sight,
 * a new version, another hash): the caller records that beat alone with updateHeartbeat, which is
 * safe to run again for a row this statement did refresh. At most MAX_BEATS_PER_STATEMENT beats,
 * and each (host, binary) at most once. Portable: no RETURNING (MariaDB has none for UPDATE).
 */
export async function updateHeartbeats(
  db: Kysely<Database>,
  beats: readonly Beat[],
  now: string,
): Promise<boolean[]> {
  if (beats.length > MAX_BEATS_PER_STATEMENT)
    throw new RangeError(`at most ${MAX_BEATS_PER_STATEMENT} beats per statement`)
  const settled = beats.map(() => false)
  const byBinary = new Map<string, number[]>()
  beats.forEach((b, i) => {
    const indexes = byBinary.get(b.binary)
    if (indexes) indexes.push(i)
    else byBinary.set(b.binary, [i])
  })
  for (const [binary, indexes] of byBinary) {
    const group = indexes.map((i) => beats[i]!)
    const hosts = group.map((b) => b.host)
    const res = await db
      .updateTable('services')
      .set({ last_seen: now, updated_at: now })
      .where('binary', '=', binary)
      .where('host', 'in', hosts)
      .where((eb) =>
        eb.or(
          group.map((b) =>
            eb.and([
              eb('host', '=', b.host),
              eb('version', '=', b.version),
              ...(b.reportHash === undefined ? [] : [eb('report_hash', '=', b.reportHash)]),
            ]),
          ),
        ),
      )
      .executeTakeFirst()
    if (Number(res.numUpdatedRows) === group.length) {
      for (const i of indexes) settled[i] = true
      continue
    }
    // Some row missed: a row that holds the beat now was refreshed by it (or, which is the same
    // state, by another writer); any other beat is unsettled.
    const rows = await db
      .selectFrom('services')
      .select(['host', 'version', 'report_hash', 'last_seen'])
      .where('binary', '=', binary)
      .where('host', 'in', hosts)
      .execute()
    const byHost = new Map(rows.map((r) => [r.host, r]))
    for (const i of indexes) {
      const b = beats[i]!
      const row = byHost.get(b.host)
      settled[i] =
        row !== undefined &&
        row.last_seen === now &&
        row.version === b.version &&
        (b.reportHash === undefined || row.report_hash === b.reportHash)
    }
  }
  return settled
}

/** The last accepted inventory hash of a host's agent, or null when none was accepted yet. */
export async function getReportHash(db: ReadDb, host: string): Promise<string | null> {
  const row = await db
    .selectFrom('services')
    .select('report_hash')
    .where('host', '=', host)
    .where('binary', '=', AGENT_BINARY)
    .executeTakeFirst()
  return row?.report_hash ?? null
}

/**
 * Stores the hash of an accepted report, or null so that the next report is diffed again (a report
 * also counts as a sign of life).
 */
export async function updateReportHash(
  db: Kysely<Database>,
  host: string,
  hash: string | null,
  now: string,
): Promise<void> {
  await upsert(
    db,
    host,
    AGENT_BINARY,
    { report_hash: hash, last_seen: now, updated_at: now },
    { version: '' },
  )
}

/**
 * The lease sweep's one query: agents whose last beat is before `cutoff` and that still have a
 * device not fenced (health ok or degraded). Indexed by `services_lease_idx` (binary, last_seen).
 */
export async function listSilentAgents(
  db: ReadDb,
  cutoff: string,
): Promise<{ host: string; lastSeen: string }[]> {
  const rows = await db
    .selectFrom('services as s')
    .select(['s.host', 's.last_seen'])
    .where('s.binary', '=', AGENT_BINARY)
    .where('s.last_seen', '<', cutoff)
    .where(({ exists, selectFrom }) =>
      exists(
        selectFrom('devices as d')
          .select('d.id')
          .whereRef('d.hostname', '=', 's.host')
          .where('d.health', 'in', ['ok', 'degraded']),
      ),
    )
    .orderBy('s.host')
    .execute()
  return rows.map((r) => ({ host: r.host, lastSeen: r.last_seen }))
}

/** The last beat of a host's agent (its lease), or null when no agent of that host ever beat. */
export async function getAgentLastSeen(db: ReadDb, host: string): Promise<string | null> {
  const row = await db
    .selectFrom('services')
    .select('last_seen')
    .where('host', '=', host)
    .where('binary', '=', AGENT_BINARY)
    .executeTakeFirst()
  return row?.last_seen ?? null
}

/** Forgets the accepted report hashes of these hosts' agents, so that their next reports are diffed in full. */
export async function deleteReportHashes(
  db: Kysely<Database>,
  hosts: readonly string[],
): Promise<void> {
  for (let i = 0; i < hosts.length; i += 500) {
    await db
      .updateTable('services')
      .set({ report_hash: null })
      .where('binary', '=', AGENT_BINARY)
      .where('host', 'in', hosts.slice(i, i + 500))
      .execute()
  }
}

interface Changes {
  version?: string
  report_hash?: string | null
  last_seen: string
  updated_at: string
}

/**
 * UPDATE, then INSERT when no row matched, then UPDATE again if a concurrent writer inserted first.
 * Portable across the three dialects (no ON CONFLICT / ON DUPLICATE KEY). The last step cannot help
 * inside a PostgreSQL transaction (the failed INSERT aborts it); there the error reaches the caller.
 */
async function upsert(
  db: Kysely<Database>,
  host: string,
  binary: string,
  changes: Changes,
  insertOnly: { version: string; report_hash?: string | null },
): Promise<void> {
  const update = () =>
    db
      .updateTable('services')
      .set(changes)
      .where('host', '=', host)
      .where('binary', '=', binary)
      .executeTakeFirst()
  if (Number((await update()).numUpdatedRows) > 0) return
  try {
    await db
      .insertInto('services')
      .values({
        host,
        binary,
        report_hash: null,
        ...insertOnly,
        ...changes,
        created_at: changes.last_seen,
        updated_at: null,
      })
      .execute()
  } catch (err) {
    if (!isUniqueViolation(err)) throw err
    await update()
  }
}
