/**
 * Devices, read: list (filtered, sorted, paged), get, one host's, and their units counted by what
 * holds them (for `device_state`). The status switch is src/db/devices.ts.
 */
import type { Expression, SqlBool } from 'kysely'
import type { ReadDb } from '../core/connection.js'
import { NotFoundError } from '../../domain/errors.js'
import type {
  Device,
  DeviceStatus,
  DeviceType,
  Health,
  Lifecycle,
  PciAddress,
} from '../../domain/inventory/inventory.js'
import { NO_UNITS, type UnitCounts } from '../../domain/inventory/device-state.js'
import { jsonMemo } from '../core/json-memo.js'
import { paginate, type PageOptions, type PageSpec } from '../core/pagination.js'
import { precompile } from '../core/precompiled.js'
import type { DeviceRow } from '../core/schema.js'

/** Columns a device list may sort by. */
export const DEVICE_SORT_KEYS = [
  'id',
  'uuid',
  'type',
  'vendor',
  'model',
  'hostname',
  'status',
  'created_at',
  'updated_at',
] as const
export type DeviceSortKey = (typeof DEVICE_SORT_KEYS)[number]

/** Filters of `listDevices`; all are exact matches and combine with AND. */
export interface DeviceFilter extends PageOptions<DeviceSortKey> {
  type?: string
  vendor?: string
  hostname?: string
  /** ok | degraded | failed | unknown (microversion 2.5's `?health=`). */
  health?: string
}

const PAGE: PageSpec<DeviceSortKey> = {
  table: 'devices',
  keys: DEVICE_SORT_KEYS,
  nullable: ['updated_at'],
  notFoundCode: 'DEVICE_NOT_FOUND',
}

/** A device's control path, parsed once per distinct text (see json-memo.ts). */
const parseControlPath = jsonMemo<PciAddress>()

/** Maps a `devices` row to the domain type. */
export function toDevice(row: DeviceRow): Device {
  return {
    id: row.id,
    uuid: row.uuid,
    type: row.type as DeviceType,
    vendor: row.vendor,
    model: row.model,
    stdBoardInfo: row.std_board_info,
    vendorBoardInfo: row.vendor_board_info,
    hostname: row.hostname,
    status: row.status as DeviceStatus,
    lifecycle: row.lifecycle as Lifecycle,
    lifecycleReason: row.lifecycle_reason,
    health: row.health as Health,
    healthReason: row.health_reason,
    healthUpdatedAt: row.health_updated_at,
    controlPath: parseControlPath(row.cpid_info),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

/**
 * Lists devices, by default in id order.
 * @throws NotFoundError (`details.field` 'marker') when the marker names no device.
 * @throws InvalidInputError for an unknown sort key or a bad limit.
 */
export async function listDevices(db: ReadDb, filter: DeviceFilter = {}): Promise<Device[]> {
  let qb = db.selectFrom('devices').selectAll()
  if (filter.type !== undefined) qb = qb.where('type', '=', filter.type)
  if (filter.vendor !== undefined) qb = qb.where('vendor', '=', filter.vendor)
  if (filter.hostname !== undefined) qb = qb.where('hostname', '=', filter.hostname)
  if (filter.health !== undefined) qb = qb.where('health', '=', filter.health)
  qb = await paginate(db, qb, PAGE, filter)
  return (await qb.execute()).map(toDevice)
}

// Precompiled: `GET /v2/devices/{uuid}` is the API's hottest read (see precompiled.ts).
const selectByUuid = precompile((db: ReadDb, uuid: string) =>
  db.selectFrom('devices').selectAll().where('uuid', '=', uuid),
)

/** @throws NotFoundError with code DEVICE_NOT_FOUND. */
export async function getDevice(db: ReadDb, uuid: string): Promise<Device> {
  const row = await selectByUuid.first(db, uuid)
  if (!row) throw deviceNotFound(uuid)
  return toDevice(row)
}

/** Every device of one host, in id order. */
export async function listDevicesByHost(db: ReadDb, hostname: string): Promise<Device[]> {
  const rows = await db
    .selectFrom('devices')
    .selectAll()
    .where('hostname', '=', hostname)
    .orderBy('id')
    .execute()
  return rows.map(toDevice)
}

/**
 * The attach handles of each device in `deviceIds`, counted by what holds them (UnitCounts), in one
 * grouped statement; a device without handles gets zeros.
 */
export async function deviceUnitCounts(
  db: ReadDb,
  deviceIds: readonly number[],
): Promise<Map<number, UnitCounts>> {
  const counts = new Map<number, UnitCounts>(deviceIds.map((id) => [id, NO_UNITS]))
  if (deviceIds.length === 0) return counts
  const rows = await db
    .selectFrom('attach_handles as h')
    .innerJoin('deployables as d', 'd.id', 'h.deployable_id')
    .select((eb) => {
      const pending = eb('h.clean_state', '=', 'pending')
      const count = (when: Expression<SqlBool>) =>
        eb.fn.sum<string | number>(eb.case().when(when).then(1).else(0).end())
      return [
        'd.device_id as deviceId',
        count(eb.and([eb('h.in_use', '=', 1), eb('h.clean_state', 'is', null)])).as('held'),
        count(eb.and([pending, eb('h.clean_attempt_at', 'is', null)])).as('cleanWaiting'),
        count(eb.and([pending, eb('h.clean_attempt_at', 'is not', null)])).as('cleanAsked'),
        count(eb('h.clean_state', '=', 'failed')).as('cleanFailed'),
      ]
    })
    .where('d.device_id', 'in', deviceIds)
    .groupBy('d.device_id')
    .execute()
  // PostgreSQL and MariaDB return SUM as a string (bigint, decimal).
  for (const r of rows) {
    counts.set(Number(r.deviceId), {
      held: Number(r.held),
      cleanWaiting: Number(r.cleanWaiting),
      cleanAsked: Number(r.cleanAsked),
      cleanFailed: Number(r.cleanFailed),
    })
  }
  return counts
}

function deviceNotFound(uuid: string): NotFoundError {
  return new NotFoundError(`device ${uuid} not found`, {
    code: 'DEVICE_NOT_FOUND',
    details: { uuid },
  })
}
