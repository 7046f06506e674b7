/**
 * Commit markers: how the group committer (group-commit.ts) learns whether a transaction whose
 * COMMIT failed did commit, since the server may have committed and only its answer was lost.
 *
 * Each transaction inserts one row into `commit_markers` (migration 0006) as its last statement,
 * under a uuid made before the transaction began. After a failed COMMIT the committer inserts the
 * same id again, on another connection, committing at once. That insert waits on the unique key
 * while the first transaction is still settling (the server may be committing it right now); then
 * a duplicate means it committed, and success means it rolled back (and, the id being taken now,
 * it never can commit later). A plain SELECT would not do: it does not wait, so it could read
 * "absent" just before the COMMIT lands. A lock wait longer than PROBE_LOCK_WAIT_S, or a database
 * that cannot be reached, leaves the outcome unknown.
 *
 * SQLite needs none of this: it runs in this process, so a COMMIT's answer cannot be lost, and a
 * failed COMMIT there left the transaction open (the committer then rolls it back) or rolled back.
 *
 * Rows of settled transactions are deleted in bulk every SWEEP_AT transactions and when the
 * committer closes, so the table holds about SWEEP_AT rows per committer. Rows older than a day
 * (a committer that died, an unknown outcome, a keyed marker) go at a committer's first sweep,
 * then hourly.
 *
 * Keyed markers (`writeKeyedMarkers`) are rows named by a write's key instead of made for one
 * transaction: a write that must know its own second delivery once its rows are gone (a delete
 * redelivered by RabbitMQ, docs/arqs.md "Redelivered deletes") writes them in its transaction and
 * looks for them when it runs again. They live until the day-old sweep, long after the broker has
 * dropped the request (its expiration), on every database, SQLite included.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely'
import { newUuid } from '../../domain/ids.js'
import { formatTimestamp } from '../../domain/time.js'
import type { DatabaseHandle, DialectName } from './connection.js'
import { isTransientLockError, isUniqueViolation } from './errors.js'
import { isUnreachable } from './mysql-pool.js'
import { precompileWrite } from './precompiled.js'
import type { Database } from './schema.js'

/** Where a transaction whose COMMIT failed stands. */
export type Outcome = 'committed' | 'rolled-back' | 'unknown'

/** The marker of one transaction, made before it begins. */
export interface Marker {
  id: string
  createdAt: string
}

export interface CommitMarkers {
  /** A fresh marker for the next transaction; undefined when the database needs none (SQLite). */
  next(): Marker | undefined
  /** Writes `marker` in `trx`: its last statement before COMMIT. */
  write(trx: Kysely<Database>, marker: Marker): Promise<void>
  /** The transaction of `marker` committed: its row may go. */
  settled(marker: Marker): void
  /** After a failed COMMIT: how the transaction of `marker` ended. Never rejects. */
  outcome(marker: Marker): Promise<Outcome>
  /** Deletes the rows of settled transactions once SWEEP_AT piled up, or any with `all`. Never rejects. */
  sweep(options?: { all?: boolean }): Promise<void>
}

/** A transaction's marker, its last statement: every write transaction runs it (see precompiled.ts). */
const insertMarker = precompileWrite((db: Kysely<Database>, id: string, createdAt: string) =>
  db.insertInto('commit_markers').values({ id, created_at: createdAt }),
)

/** Settled rows deleted together (one DELETE per this many transactions). */
const SWEEP_AT = 64
/** Settled ids kept for deletion at most; older ones are left to the day-old sweep. */
const MAX_SETTLED = 1024
/** How long the outcome query waits for the transaction to settle. */
const PROBE_LOCK_WAIT_S = 10
/** Tries of the outcome query that could not reach the database. */
const PROBE_ATTEMPTS = 3
const HOUR_MS = 3_600_000
const DAY_MS = 24 * HOUR_MS

/** Session statements bounding the probe's lock wait, and restoring the default afterwards. */
const LOCK_WAIT: Record<
  Exclude<DialectName, 'sqlite'>,
  [RawBuilder<unknown>, RawBuilder<unknown>]
> = {
  postgres: [sql.raw(`SET lock_timeout = '${PROBE_LOCK_WAIT_S}s'`), sql.raw('RESET lock_timeout')],
  mysql: [
    sql.raw(`SET SESSION innodb_lock_wait_timeout = ${PROBE_LOCK_WAIT_S}`),
    sql.raw('SET SESSION innodb_lock_wait_timeout = DEFAULT'),
  ],
}

/**
 * On a Galera node, the probe's INSERT first waits until the node has applied every write the
 * cluster ordered before it (`wsrep_sync_wait` 4 = INSERT/REPLACE, besides the session's bits): so a
 * transaction that did replicate is seen even when the probe runs on another node than the COMMIT
 * (the pool moved on, mysql-pool.ts). One that failed certification (1213 at COMMIT) was ordered
 * nowhere, and the probe's insert succeeds: rolled back. Harmless without Galera; MySQL, which lacks
 * the variable, refuses both statements, and that is ignored.
 */
const GALERA_PROBE: [RawBuilder<unknown>, RawBuilder<unknown>] = [
  sql.raw(
    'SET @cyborg_sync_wait = @@session.wsrep_sync_wait, SESSION wsrep_sync_wait = @@session.wsrep_sync_wait | 4',
  ),
  sql.raw('SET SESSION wsrep_sync_wait = @cyborg_sync_wait'),
]

/** The commit markers of one committer over `handle`. */
export function createCommitMarkers(handle: DatabaseHandle): CommitMarkers {
  const { db, dialect } = handle
  const settledIds: string[] = []
  let lastDayOldSweep = -Infinity

  const settled = (marker: Marker) => {
    settledIds.push(marker.id)
    if (settledIds.length > MAX_SETTLED) settledIds.splice(0, settledIds.length - MAX_SETTLED)
  }

  /** One try of the outcome query; rejects when the database could not be asked. */
  const probe = (marker: Marker, lockWait: [RawBuilder<unknown>, RawBuilder<unknown>]) =>
    db.connection().execute(async (conn): Promise<Outcome> => {
      await lockWait[0].execute(conn)
      const galera =
        dialect === 'mysql' &&
        (await GALERA_PROBE[0].execute(conn).then(
          () => true,
          () => false,
        ))
      try {
        await conn
          .insertInto('commit_markers')
          .values({ id: marker.id, created_at: marker.createdAt })
          .execute()
        return 'rolled-back'
      } catch (err) {
        if (isUniqueViolation(err)) return 'committed'
        // Still not settled: it may yet commit. A node not ready (1047) is asked again instead.
        if (isTransientLockError(err) && !isUnreachable(err)) return 'unknown'
        throw err
      } finally {
        await lockWait[1].execute(conn).catch(() => {})
        if (galera) await GALERA_PROBE[1].execute(conn).catch(() => {})
      }
    })

  return {
    next: () =>
      dialect === 'sqlite' ? undefined : { id: newUuid(), createdAt: formatTimestamp(new Date()) },

    async write(trx, marker) {
      await insertMarker(trx, marker.id, marker.createdAt)
    },

    settled,

    async outcome(marker) {
      if (dialect === 'sqlite') return 'rolled-back'
      for (let attempt = 1; attempt <= PROBE_ATTEMPTS; attempt++) {
        try {
          const outcome = await probe(marker, LOCK_WAIT[dialect])
          // Committed, the row is the transaction's; rolled back, the probe's own: either may go.
          if (outcome !== 'unknown') settled(marker)
          return outcome
        } catch {
          if (attempt < PROBE_ATTEMPTS) await new Promise((r) => setTimeout(r, 100 * attempt))
        }
      }
      return 'unknown'
    },

    async sweep(options = {}) {
      if (settledIds.length >= SWEEP_AT || (options.all && settledIds.length > 0)) {
        const ids = settledIds.splice(0)
        try {
          await db.deleteFrom('commit_markers').where('id', 'in', ids).execute()
        } catch {
          settledIds.unshift(...ids)
          if (settledIds.length > MAX_SETTLED) settledIds.splice(0, settledIds.length - MAX_SETTLED)
          return
        }
        // SQLite settles no transactions' markers (it needs none): its keyed ones go hourly.
      } else if (dialect !== 'sqlite') return
      if (Date.now() - lastDayOldSweep < HOUR_MS) return
      lastDayOldSweep = Date.now()
      const cutoff = formatTimestamp(new Date(Date.now() - DAY_MS))
      await db
        .deleteFrom('commit_markers')
        .where('created_at', '<', cutoff)
        .execute()
        .catch(() => {})
    },
  }
}

/** Ids per statement of the keyed markers (well under every database's bound-parameter limit). */
const KEYED_CHUNK = 500

/** Writes the keyed markers `ids` in `trx` (see the top of this file); `createdAt` dates them for the sweep. */
export async function writeKeyedMarkers(
  trx: Kysely<Database>,
  ids: readonly string[],
  createdAt: string,
): Promise<void> {
  for (let i = 0; i < ids.length; i += KEYED_CHUNK) {
    const values = ids.slice(i, i + KEYED_CHUNK).map((id) => ({ id, created_at: createdAt }))
    await trx.insertInto('commit_markers').values(values).execute()
  }
}

/** Which of the keyed markers `ids` exist (a write with their key committed them). */
export async function keyedMarkersFound(
  db: Kysely<Database>,
  ids: readonly string[],
): Promise<Set<string>> {
  const found = new Set<string>()
  for (let i = 0; i < ids.length; i += KEYED_CHUNK) {
    const rows = await db
      .selectFrom('commit_markers')
      .select('id')
      .where('id', 'in', ids.slice(i, i + KEYED_CHUNK))
      .execute()
    for (const r of rows) found.add(r.id)
  }
  return found
}
