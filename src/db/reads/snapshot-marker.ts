/**
 * A cheap marker of "nothing was committed since" (issue 28), for the fleet reads of capacity and
 * explain (src/api/v2/fleet-reads.ts): one short query whose answer changes whenever any
 * transaction commits (or aborts) anywhere in the database.
 *
 * PostgreSQL: the current snapshot, `xmin:xmax:xip`. A transaction that completes between two
 * snapshots either was running at the first (listed in xip, which it then leaves) or started
 * after it (so xmax, the latest completed xid + 1, moves): two equal snapshots see exactly the
 * same committed data. Nothing is written to mark a change, so writers pay nothing.
 * SQLite and MariaDB: undefined, no marker (their reads are not kept; see docs/capacity.md).
 */
import { sql } from 'kysely'
import { dialectOf, type ReadDb } from '../core/connection.js'

/** The database's snapshot marker now, or undefined when the dialect has none. */
export async function snapshotMarker(db: ReadDb): Promise<string | undefined> {
  if (dialectOf(db) !== 'postgres') return undefined
  const { rows } = await sql<{ m: string }>`select pg_current_snapshot()::text as m`.execute(db)
  return rows[0]?.m
}
