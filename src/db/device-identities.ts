/**
 * `device_identities` (migration 0012; docs/identity.md): what the conductor remembers of every
 * device seen on a host, read and written by report ingestion (src/db/host-inventory.ts) inside
 * its transaction. The matching itself is pure domain policy (src/domain/device-identity.ts).
 */
import type { Kysely } from 'kysely'
import type { ReadDb } from './core/connection.js'
import type { KnownIdentity } from '../domain/device-identity.js'
import type { InventoryDiff } from '../domain/inventory/inventory-diff.js'
import type { Database, DeviceRow } from './core/schema.js'

/** Rows per multi-row INSERT and ids per IN list. */
const CHUNK = 200

/** Every identity remembered on `host`. */
export async function listDeviceIdentities(db: ReadDb, host: string): Promise<KnownIdentity[]> {
  const rows = await db
    .selectFrom('device_identities')
    .selectAll()
    .where('hostname', '=', host)
    .execute()
  return rows.map((r) => ({
    identityKey: r.identity_key,
    deviceUuid: r.device_uuid,
    lifecycle: r.lifecycle,
    lifecycleReason: r.lifecycle_reason,
    status: r.status,
  }))
}

/**
 * Moves devices to their new control paths (`diff.moveDevices`), in two steps so that two cards
 * that swapped slots never hold one path at once (`devices_host_cpid_uq`).
 */
export async function moveDevices(
  db: Kysely<Database>,
  diff: Pick<InventoryDiff, 'moveDevices'>,
  now: string,
): Promise<void> {
  if (diff.moveDevices.length > 1) {
    for (const { id } of diff.moveDevices) {
      await db
        .updateTable('devices')
        .set({ cpid_info: `{"moving":${id}}` })
        .where('id', '=', id)
        .execute()
    }
  }
  for (const { id, key, cpidType } of diff.moveDevices) {
    await db
      .updateTable('devices')
      .set({ cpid_info: key, cpid_type: cpidType, updated_at: now })
      .where('id', '=', id)
      .execute()
  }
}

/**
 * Writes a diff's identities, after its devices were written: renames, then inserts (their
 * lifecycle and status read from the device rows, or from `removed` for a row deleted just now),
 * then what each removed device was, for when it comes back.
 */
export async function updateDeviceIdentities(
  db: Kysely<Database>,
  host: string,
  diff: Pick<InventoryDiff, 'identities'>,
  removed: readonly DeviceRow[],
  now: string,
): Promise<void> {
  for (const { identityKey, deviceUuid, rekeyFrom } of diff.identities) {
    if (rekeyFrom === undefined) continue
    await db
      .updateTable('device_identities')
      .set({ identity_key: identityKey, device_uuid: deviceUuid, updated_at: now })
      .where('hostname', '=', host)
      .where('identity_key', '=', rekeyFrom)
      .execute()
  }
  const inserts = diff.identities.filter((i) => i.insert)
  const rows = new Map(removed.map((r) => [r.uuid, r]))
  const missing = inserts.map((i) => i.deviceUuid).filter((u) => !rows.has(u))
  for (let i = 0; i < missing.length; i += CHUNK) {
    const chunk = missing.slice(i, i + CHUNK)
    for (const r of await db.selectFrom('devices').selectAll().where('uuid', 'in', chunk).execute())
      rows.set(r.uuid, r)
  }
  const values = inserts.flatMap(({ identityKey, deviceUuid }) => {
    const row = rows.get(deviceUuid)
    if (row === undefined) return []
    return [
      {
        hostname: host,
        identity_key: identityKey,
        device_uuid: deviceUuid,
        lifecycle: row.lifecycle,
        lifecycle_reason: row.lifecycle_reason,
        status: row.status,
        created_at: now,
        updated_at: null,
      },
    ]
  })
  for (let i = 0; i < values.length; i += CHUNK) {
    await db
      .insertInto('device_identities')
      .values(values.slice(i, i + CHUNK))
      .execute()
  }
  const inserted = new Set(values.map((v) => v.device_uuid))
  for (const r of removed) {
    if (inserted.has(r.uuid)) continue
    await db
      .updateTable('device_identities')
      .set({
        lifecycle: r.lifecycle,
        lifecycle_reason: r.lifecycle_reason,
        status: r.status,
        updated_at: now,
      })
      .where('hostname', '=', host)
      .where('device_uuid', '=', r.uuid)
      .execute()
  }
}

/** The serial of device `deviceUuid` when its identity is one (`serial:…`), for the custody ledger. */
export async function deviceSerialOf(db: ReadDb, deviceUuid: string): Promise<string | null> {
  const row = await db
    .selectFrom('device_identities')
    .select('identity_key')
    .where('device_uuid', '=', deviceUuid)
    .where('identity_key', 'like', 'serial:%')
    .orderBy('identity_key', 'desc')
    .executeTakeFirst()
  return row ? row.identity_key.slice('serial:'.length) : null
}
