/**
 * The reconfiguration fence (migration 0015): a program or configure takes every unit of what it
 * changes out of service in one statement, and gives them back in one. Taking is all or nothing:
 * when any unit is held (by a request, a v1 attachment, a clean or another operation) the caller's
 * transaction is rolled back with a ConflictError naming the holders.
 *
 * Against a concurrent claim the row locks decide: the fence's UPDATE takes only units still free,
 * and the holders are read after it, so a claim that committed first is seen and one that comes
 * after finds the units in use.
 */
import type { Kysely } from 'kysely'
import type { ReadDb } from './core/connection.js'
import type { Database } from './core/schema.js'
import { ConflictError, NotFoundError } from '../domain/errors.js'
import type { PciAddress } from '../domain/inventory/inventory.js'

export type ReconfigKind = 'program' | 'configure'

/** A device (and the deployables of it an operation changes), as a program or configure needs it. */
export interface ReconfigTarget {
  deviceId: number
  deviceUuid: string
  deviceType: string
  hostname: string
  controlPath: PciAddress
  deployables: { id: number; uuid: string; name: string; bitstreamId: string | null }[]
}

/** The deployable `uuid` with its device; NotFoundError when there is none. */
export async function getProgramTarget(db: ReadDb, uuid: string): Promise<ReconfigTarget> {
  const row = await db
    .selectFrom('deployables as p')
    .innerJoin('devices as d', 'd.id', 'p.device_id')
    .select(['p.id', 'p.uuid', 'p.name', 'p.bitstream_id', 'd.id as device_id'])
    .select(['d.uuid as device_uuid', 'd.type', 'd.hostname', 'd.cpid_info'])
    .where('p.uuid', '=', uuid)
    .executeTakeFirst()
  if (!row) throw new NotFoundError(`deployable ${uuid} not found`, { details: { uuid } })
  return {
    ...deviceOf(row),
    deployables: [{ id: row.id, uuid: row.uuid, name: row.name, bitstreamId: row.bitstream_id }],
  }
}

/** The device `uuid` with all its deployables; NotFoundError when there is none. */
export async function getConfigureTarget(db: ReadDb, uuid: string): Promise<ReconfigTarget> {
  const row = await db
    .selectFrom('devices as d')
    .select(['d.id as device_id', 'd.uuid as device_uuid', 'd.type', 'd.hostname', 'd.cpid_info'])
    .where('d.uuid', '=', uuid)
    .executeTakeFirst()
  if (!row) throw new NotFoundError(`device ${uuid} not found`, { details: { uuid } })
  const deployables = await db
    .selectFrom('deployables')
    .select(['id', 'uuid', 'name', 'bitstream_id'])
    .where('device_id', '=', row.device_id)
    .orderBy('id')
    .execute()
  return {
    ...deviceOf(row),
    deployables: deployables.map((p) => ({ ...p, bitstreamId: p.bitstream_id })),
  }
}

const deviceOf = (row: {
  device_id: number
  device_uuid: string
  type: string
  hostname: string
  cpid_info: string
}) => ({
  deviceId: row.device_id,
  deviceUuid: row.device_uuid,
  deviceType: row.type,
  hostname: row.hostname,
  controlPath: JSON.parse(row.cpid_info) as PciAddress,
})

/**
 * Takes every free unit of `deployableIds` for `operationUuid`; ConflictError (code
 * RECONFIG_UNITS_HELD, `details.holders`) when any unit is held. Run it in a transaction.
 */
export async function takeReconfigFence(
  trx: Kysely<Database>,
  fence: {
    deployableIds: readonly number[]
    operationUuid: string
    kind: ReconfigKind
    now: string
    /** What the conflict's message says cannot be done (`program deployable …`). */
    what: string
  },
): Promise<number> {
  if (fence.deployableIds.length === 0) return 0
  const ids = [...fence.deployableIds]
  const taken = await trx
    .updateTable('attach_handles')
    .set({
      in_use: 1,
      reconfig_uuid: fence.operationUuid,
      reconfig_kind: fence.kind,
      reconfig_since: fence.now,
    })
    .where('deployable_id', 'in', ids)
    .where('in_use', '=', 0)
    .executeTakeFirst()
  const held = await trx
    .selectFrom('attach_handles as h')
    .leftJoin('accelerator_requests as a', 'a.attach_handle_id', 'h.id')
    .select(['h.uuid', 'h.clean_state', 'h.reconfig_uuid', 'a.uuid as arq_uuid'])
    .where('h.deployable_id', 'in', ids)
    .where('h.in_use', '=', 1)
    .where((eb) =>
      eb.or([eb('h.reconfig_uuid', 'is', null), eb('h.reconfig_uuid', '!=', fence.operationUuid)]),
    )
    .orderBy('h.id')
    .execute()
  if (held.length > 0) {
    const holders = held.map((h) =>
      h.arq_uuid !== null
        ? `accelerator request ${h.arq_uuid}`
        : h.clean_state !== null
          ? `unit ${h.uuid} (cleaning)`
          : h.reconfig_uuid !== null
            ? `unit ${h.uuid} (another reconfiguration)`
            : `unit ${h.uuid} (a v1 attachment)`,
    )
    throw new ConflictError(
      `cannot ${fence.what} while its units are in use: ${[...new Set(holders)].join(', ')}`,
      { code: 'RECONFIG_UNITS_HELD', details: { holders } },
    )
  }
  return Number(taken.numUpdatedRows)
}

/** Gives back the units `operationUuid` holds (those still there after a report); how many. */
export async function liftReconfigFence(
  db: Kysely<Database>,
  operationUuid: string,
  now: string,
): Promise<number> {
  const res = await db
    .updateTable('attach_handles')
    .set({
      in_use: 0,
      reconfig_uuid: null,
      reconfig_kind: null,
      reconfig_since: null,
      updated_at: now,
    })
    .where('reconfig_uuid', '=', operationUuid)
    .executeTakeFirst()
  return Number(res.numUpdatedRows)
}

/** An operation that has held units since before a time: its host, and the deployables held. */
export interface HeldFence {
  operationUuid: string
  kind: ReconfigKind
  hostname: string
  since: string
  deployableIds: number[]
}

/** Fences taken before `before` (an operation that crashed or whose agent never answered). */
export async function listStaleFences(db: ReadDb, before: string): Promise<HeldFence[]> {
  const rows = await db
    .selectFrom('attach_handles as h')
    .innerJoin('deployables as p', 'p.id', 'h.deployable_id')
    .innerJoin('devices as d', 'd.id', 'p.device_id')
    .select(['h.reconfig_uuid', 'h.reconfig_kind', 'h.reconfig_since', 'h.deployable_id'])
    .select('d.hostname')
    .where('h.reconfig_uuid', 'is not', null)
    .where('h.reconfig_since', '<', before)
    .orderBy('h.id')
    .limit(10_000)
    .execute()
  const out = new Map<string, HeldFence>()
  for (const r of rows) {
    const key = r.reconfig_uuid!
    const cur = out.get(key) ?? {
      operationUuid: key,
      kind: r.reconfig_kind as ReconfigKind,
      hostname: r.hostname,
      since: r.reconfig_since!,
      deployableIds: [],
    }
    if (!cur.deployableIds.includes(r.deployable_id)) cur.deployableIds.push(r.deployable_id)
    out.set(key, cur)
  }
  return [...out.values()]
}

/** Forgets the image of deployables an interrupted program may have half written. */
export async function clearBitstreams(
  db: Kysely<Database>,
  deployableIds: readonly number[],
  now: string,
): Promise<void> {
  if (deployableIds.length === 0) return
  await db
    .updateTable('deployables')
    .set({ bitstream_id: null, updated_at: now })
    .where('id', 'in', [...deployableIds])
    .execute()
}
