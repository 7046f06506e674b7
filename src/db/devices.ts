/** Devices, written: the operator's status switch. Reads are src/db/reads/device-reads.ts. */
import type { Kysely } from 'kysely'
import type { Device, DeviceStatus } from '../domain/inventory/inventory.js'
import type { Database } from './core/schema.js'
import { getDevice } from './reads/device-reads.js'

/**
 * Sets the operator status (enabled | maintaining) and returns the device as saved.
 * @throws NotFoundError with code DEVICE_NOT_FOUND.
 */
export async function updateDeviceStatus(
  db: Kysely<Database>,
  uuid: string,
  status: DeviceStatus,
  now: string,
): Promise<Device> {
  await db
    .updateTable('devices')
    .set({ status, updated_at: now })
    .where('uuid', '=', uuid)
    .execute()
  return getDevice(db, uuid)
}
