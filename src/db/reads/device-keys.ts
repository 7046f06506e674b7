/**
 * What device telemetry needs of the inventory (read only): each PCI device's host, control path
 * (`dddd:bb:dd.f`), uuid, type and vendor, to label the samples agents send by control path. The
 * conductor reads one host's at a time (and caches them), the API the hosts of one request.
 */
import type { ReadDb } from '../core/connection.js'
import { controlPathText } from '../../domain/control-path.js'

/** A device as telemetry names it. */
export interface DeviceKey {
  host: string
  /** `dddd:bb:dd.f`. */
  controlPath: string
  uuid: string
  type: string
  vendor: string
}

/** Hosts per query: well below every engine's limit on bound parameters. */
const CHUNK = 500

/** The PCI devices of `hosts` (remote accelerators have no PCI control path and no telemetry). */
export async function listDeviceKeys(db: ReadDb, hosts: readonly string[]): Promise<DeviceKey[]> {
  const out: DeviceKey[] = []
  const unique = [...new Set(hosts)]
  for (let i = 0; i < unique.length; i += CHUNK) {
    const rows = await db
      .selectFrom('devices')
      .select(['hostname', 'cpid_info', 'uuid', 'type', 'vendor'])
      .where('hostname', 'in', unique.slice(i, i + CHUNK))
      .where('cpid_type', '=', 'PCI')
      .orderBy('id')
      .execute()
    for (const r of rows)
      out.push({
        host: r.hostname,
        controlPath: controlPathText(r.cpid_info),
        uuid: r.uuid,
        type: r.type,
        vendor: r.vendor,
      })
  }
  return out
}
