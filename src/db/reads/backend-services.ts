/**
 * Read-only: the backends (devices) with their deployables and attributes, as last reported, for
 * the v1 service list (which services each backend offers: derived from resource class and traits).
 */
import type { ReadDb } from '../core/connection.js'

export interface BackendDeployable {
  uuid: string
  name: string
  numAccelerators: number
  driverName: string | null
  bitstreamId: string | null
  removalPending: boolean
  /** In key order (`rc`, `trait0`, `trait1`, …). */
  attributes: { key: string; value: string }[]
}

/** A device and what it offers. */
export interface Backend {
  uuid: string
  hostname: string
  type: string
  vendor: string
  model: string
  /** Canonical JSON of the control path. */
  controlPath: string
  lifecycle: string
  health: string
  deployables: BackendDeployable[]
}

/** Backends in host then id order, optionally of one host or one device uuid. */
export async function listBackends(
  db: ReadDb,
  filter: { hostname?: string; uuid?: string } = {},
): Promise<Backend[]> {
  let qb = db.selectFrom('devices').selectAll()
  if (filter.hostname !== undefined) qb = qb.where('hostname', '=', filter.hostname)
  if (filter.uuid !== undefined) qb = qb.where('uuid', '=', filter.uuid)
  const devices = await qb.orderBy('hostname').orderBy('id').execute()
  if (devices.length === 0) return []
  const deployables = await db
    .selectFrom('deployables')
    .selectAll()
    .where(
      'device_id',
      'in',
      devices.map((d) => d.id),
    )
    .orderBy('name')
    .execute()
  const attributes =
    deployables.length === 0
      ? []
      : await db
          .selectFrom('attributes')
          .select(['deployable_id', 'key', 'value'])
          .where(
            'deployable_id',
            'in',
            deployables.map((d) => d.id),
          )
          .orderBy('deployable_id')
          .orderBy('key')
          .execute()
  return devices.map((v) => ({
    uuid: v.uuid,
    hostname: v.hostname,
    type: v.type,
    vendor: v.vendor,
    model: v.model,
    controlPath: v.cpid_info,
    lifecycle: v.lifecycle,
    health: v.health,
    deployables: deployables
      .filter((d) => d.device_id === v.id)
      .map((d) => ({
        uuid: d.uuid,
        name: d.name,
        numAccelerators: d.num_accelerators,
        driverName: d.driver_name,
        bitstreamId: d.bitstream_id,
        removalPending: Number(d.removal_pending) === 1,
        attributes: attributes
          .filter((a) => a.deployable_id === d.id)
          .map((a) => ({ key: a.key, value: a.value })),
      })),
  }))
}
