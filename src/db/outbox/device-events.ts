/**
 * What events say about devices and deployables, read from their rows inside the transaction of
 * the change (src/domain/events.ts builds the events, src/db/outbox/events.ts writes them).
 */
import type { Kysely } from 'kysely'
import {
  deviceEvent,
  type DeployableFacts,
  type DeviceAction,
  type DeviceFacts,
} from '../../domain/events.js'
import type { ReadDb } from '../core/connection.js'
import { insertEvents } from './events.js'
import type { Database, DeviceRow } from '../core/schema.js'

/** Ids per IN list. */
const CHUNK = 500

/** A device row as events describe it. */
export function deviceFacts(row: DeviceRow): DeviceFacts {
  return {
    uuid: row.uuid,
    hostname: row.hostname,
    type: row.type,
    vendor: row.vendor,
    model: row.model,
    stdBoardInfo: row.std_board_info,
    vendorBoardInfo: row.vendor_board_info,
    status: row.status,
    lifecycle: row.lifecycle,
    lifecycleReason: row.lifecycle_reason,
    health: row.health,
    healthReason: row.health_reason,
  }
}

/** Device rows by id, in id order (chunked IN lists). */
export async function listDevicesById(db: ReadDb, ids: readonly number[]): Promise<DeviceRow[]> {
  const rows: DeviceRow[] = []
  for (let i = 0; i < ids.length; i += CHUNK) {
    const chunk = ids.slice(i, i + CHUNK)
    rows.push(...(await db.selectFrom('devices').selectAll().where('id', 'in', chunk).execute()))
  }
  return rows.sort((a, b) => a.id - b.id)
}

/** One device as events describe it, by uuid; undefined when there is none. */
export async function getDeviceFacts(db: ReadDb, uuid: string): Promise<DeviceFacts | undefined> {
  const row = await db.selectFrom('devices').selectAll().where('uuid', '=', uuid).executeTakeFirst()
  return row && deviceFacts(row)
}

/** Writes `accelerator.device.<action>` for device `uuid` as saved (one read, one INSERT). */
export async function recordDeviceEvent(
  db: Kysely<Database>,
  action: DeviceAction,
  uuid: string,
  now: string,
): Promise<void> {
  const facts = await getDeviceFacts(db, uuid)
  if (facts) await insertEvents(db, [deviceEvent(action, facts, now)])
}

/** One deployable with its device's uuid and host, as events describe it. */
export async function getDeployableFacts(
  db: ReadDb,
  deployableId: number,
): Promise<DeployableFacts | undefined> {
  const row = await db
    .selectFrom('deployables as p')
    .innerJoin('devices as d', 'd.id', 'p.device_id')
    .select([
      'p.uuid',
      'p.name',
      'd.hostname',
      'd.uuid as device_uuid',
      'p.num_accelerators',
      'p.rp_uuid',
      'p.driver_name',
      'p.bitstream_id',
    ])
    .where('p.id', '=', deployableId)
    .executeTakeFirst()
  if (!row) return undefined
  return {
    uuid: row.uuid,
    name: row.name,
    hostname: row.hostname,
    deviceUuid: row.device_uuid,
    numAccelerators: row.num_accelerators,
    rpUuid: row.rp_uuid,
    driverName: row.driver_name,
    bitstreamId: row.bitstream_id,
  }
}
