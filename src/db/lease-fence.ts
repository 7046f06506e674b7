/**
 * The lease sweep's load (src/conductor/lease-sweep.ts; docs/health.md, "Agent leases"): the
 * offered devices (health ok or degraded) of many silent agents' hosts, locked for the
 * transaction. The sweep decides their fence (src/domain/health/lease.ts) and writes it with
 * `applyLeaseFences` (device-health.ts).
 */
import type { Kysely } from 'kysely'
import { dialectOf } from './core/connection.js'
import type { Database, DeviceRow } from './core/schema.js'

/** Hosts per statement's IN list. */
const CHUNK = 500

/** The offered devices of `hosts`, locked (FOR UPDATE), in id order per chunk of hosts. */
export async function lockOfferedDevices(
  db: Kysely<Database>,
  hosts: readonly string[],
): Promise<DeviceRow[]> {
  const out: DeviceRow[] = []
  for (let i = 0; i < hosts.length; i += CHUNK) {
    const qb = db
      .selectFrom('devices as d')
      .selectAll('d')
      .where('d.hostname', 'in', hosts.slice(i, i + CHUNK))
      .where('d.health', 'in', ['ok', 'degraded'])
      .orderBy('d.id')
    out.push(...(await (dialectOf(db) === 'sqlite' ? qb : qb.forUpdate()).execute()))
  }
  return out
}
