/** Services, read: every (host, binary) row with its heartbeat, as `GET /v1/status` and the conductor list them. */
import type { ReadDb } from '../core/connection.js'
import type { ServiceRow } from '../core/schema.js'

/** The binary name under which agents heartbeat and keep their report hash. */
export const AGENT_BINARY = 'cyborg-agent'

/** A running (or once-running) service, as its heartbeats recorded it. */
export interface Service {
  id: number
  host: string
  /** cyborg-api | cyborg-conductor | cyborg-agent */
  binary: string
  version: string
  /** The agent's last accepted inventory hash; null for other binaries. */
  reportHash: string | null
  /** Time of the last heartbeat or report. */
  lastSeen: string
  createdAt: string
  updatedAt: string | null
}

/** Maps a `services` row to the API-neutral shape. */
export function toService(row: ServiceRow): Service {
  return {
    id: row.id,
    host: row.host,
    binary: row.binary,
    version: row.version,
    reportHash: row.report_hash,
    lastSeen: row.last_seen,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

/** Every service, ordered by host then binary. */
export async function listServices(db: ReadDb): Promise<Service[]> {
  const rows = await db
    .selectFrom('services')
    .selectAll()
    .orderBy('host')
    .orderBy('binary')
    .execute()
  return rows.map(toService)
}
