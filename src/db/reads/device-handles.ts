/**
 * One device's attach handles (its units), with their deployable, their state and the request
 * holding each, in one statement (`GET /v2/devices/{uuid}/attach_handles`, microversion 2.10).
 */
import type { ReadDb } from '../core/connection.js'

/** What a unit is doing, derived from its columns (the first that applies, in this order). */
export type HandleState = 'reconfiguring' | 'clean_failed' | 'cleaning' | 'in_use' | 'free'

export interface DeviceHandle {
  uuid: string
  deployableId: number
  deployableUuid: string
  deployableName: string
  attachType: string
  /** The handle's address (canonical JSON parsed: a PCI address, an mdev's). */
  attachInfo: Record<string, unknown>
  inUse: boolean
  state: HandleState
  /** null | pending | failed (docs/cleaning.md). */
  cleanState: string | null
  cleanSince: string | null
  /** program | configure, while one holds the unit out of service. */
  reconfigKind: string | null
  /** The accelerator request holding the unit, if any. */
  arqUuid: string | null
  arqState: string | null
  instanceUuid: string | null
  projectId: string | null
}

interface StateColumns {
  in_use: number
  clean_state: string | null
  reconfig_uuid: string | null
}

/** The state of a unit from its columns (in_use stays 1 while it cleans or is reconfigured). */
export function handleState(h: StateColumns): HandleState {
  if (h.reconfig_uuid !== null) return 'reconfiguring'
  if (h.clean_state === 'failed') return 'clean_failed'
  if (h.clean_state !== null) return 'cleaning'
  return h.in_use === 1 ? 'in_use' : 'free'
}

function parseInfo(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text) as unknown
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : { value }
  } catch {
    return { value: text }
  }
}

/**
 * The handles of device `deviceUuid`, by deployable then handle id; `undefined` when no device
 * has that uuid (an empty list: a device without units).
 */
export async function listDeviceHandles(
  db: ReadDb,
  deviceUuid: string,
): Promise<DeviceHandle[] | undefined> {
  const device = await db
    .selectFrom('devices')
    .select('id')
    .where('uuid', '=', deviceUuid)
    .executeTakeFirst()
  if (device === undefined) return undefined
  const rows = await db
    .selectFrom('attach_handles as h')
    .innerJoin('deployables as d', 'd.id', 'h.deployable_id')
    .leftJoin('accelerator_requests as a', 'a.attach_handle_id', 'h.id')
    .select([
      'h.uuid',
      'h.attach_type',
      'h.attach_info',
      'h.in_use',
      'h.clean_state',
      'h.clean_since',
      'h.reconfig_uuid',
      'h.reconfig_kind',
      'd.id as deployable_id',
      'd.uuid as deployable_uuid',
      'd.name as deployable_name',
      'a.uuid as arq_uuid',
      'a.state as arq_state',
      'a.instance_uuid',
      'a.project_id',
    ])
    .where('d.device_id', '=', device.id)
    .orderBy('d.id')
    .orderBy('h.id')
    .execute()
  return rows.map((r) => ({
    uuid: r.uuid,
    deployableId: Number(r.deployable_id),
    deployableUuid: r.deployable_uuid,
    deployableName: r.deployable_name,
    attachType: r.attach_type,
    attachInfo: parseInfo(r.attach_info),
    inUse: Number(r.in_use) === 1,
    state: handleState({
      in_use: Number(r.in_use),
      clean_state: r.clean_state,
      reconfig_uuid: r.reconfig_uuid,
    }),
    cleanState: r.clean_state,
    cleanSince: r.clean_since,
    reconfigKind: r.reconfig_kind,
    arqUuid: r.arq_uuid,
    arqState: r.arq_state,
    instanceUuid: r.instance_uuid,
    projectId: r.project_id,
  }))
}
