/**
 * The rows the Placement sync reads and the marks it writes: per deployable, what its provider
 * should hold (device state, attributes) and the hash of what Placement was last confirmed to hold.
 */
import type { Kysely } from 'kysely'
import type { ReadDb } from './core/connection.js'
import type { Database } from './core/schema.js'

export interface PlacementRow {
  id: number
  name: string
  rpUuid: string | null
  numAccelerators: number
  placementHash: string | null
  removalPending: boolean
  /** An ARQ names this deployable or holds one of its handles, or a handle is marked in use. */
  held: boolean
  /**
   * Handles out of service: for their clean (clean_state failed, or pending since before
   * `releasedBefore`), or held by a program or configure (reconfig_uuid). Placement shows them
   * reserved.
   */
  cleaning: number
  /** Of `cleaning`, the handles held by a program or configure. */
  reconfiguring: number
  /** Handles marked in use: bound, cleaning (young ones too) or held by a program or configure. */
  inUse: number
  /** Handles held by a request (in use, neither cleaning nor reconfiguring): Placement's allocations. */
  bound: number
  device: { uuid: string; hostname: string; lifecycle: string; status: string; health: string }
  attributes: { key: string; value: string }[]
}

export interface PlacementRowsOptions {
  /**
   * Epoch ms: a handle released at or after it whose clean is still pending is not counted in
   * `cleaning` (issue 28: its clean may well end within the conductor's Placement window; a failed
   * clean, a handle without a release time and a program or configure always count).
   * @default every pending clean counts
   */
  releasedBefore?: number | undefined
}

/** Every deployable of `host`, with its device and attributes, in id order. */
export async function listPlacementRows(
  db: ReadDb,
  host: string,
  options: PlacementRowsOptions = {},
): Promise<PlacementRow[]> {
  const deps = await db
    .selectFrom('deployables as p')
    .innerJoin('devices as d', 'd.id', 'p.device_id')
    .select([
      'p.id',
      'p.name',
      'p.rp_uuid',
      'p.num_accelerators',
      'p.placement_hash',
      'p.removal_pending',
      'd.uuid as device_uuid',
      'd.hostname',
      'd.lifecycle',
      'd.status',
      'd.health',
    ])
    .where('d.hostname', '=', host)
    .orderBy('p.id')
    .execute()
  if (deps.length === 0) return []
  const ids = deps.map((d) => d.id)
  const attributes = await db
    .selectFrom('attributes')
    .select(['deployable_id', 'key', 'value'])
    .where('deployable_id', 'in', ids)
    .orderBy('id')
    .execute()
  const heldByArq = await db
    .selectFrom('accelerator_requests as a')
    .leftJoin('attach_handles as h', 'h.id', 'a.attach_handle_id')
    .select(['a.deployable_id', 'h.deployable_id as handle_deployable_id'])
    .where((eb) => eb.or([eb('a.deployable_id', 'in', ids), eb('h.deployable_id', 'in', ids)]))
    .execute()
  const inUse = await db
    .selectFrom('attach_handles')
    .select(['deployable_id', 'clean_state', 'clean_since', 'reconfig_uuid'])
    .where('deployable_id', 'in', ids)
    .where('in_use', '=', 1)
    .execute()
  const { releasedBefore } = options
  /** A pending clean that began inside the window: not reserved (yet). */
  const young = (h: { clean_state: string | null; clean_since: string | null }) =>
    releasedBefore !== undefined &&
    h.clean_state === 'pending' &&
    h.clean_since !== null &&
    Date.parse(h.clean_since) >= releasedBefore
  const cleaning = new Map<number, number>()
  const inUseCount = new Map<number, number>()
  const bound = new Map<number, number>()
  const reconfiguring = new Map<number, number>()
  const count = (m: Map<number, number>, id: number) => m.set(id, (m.get(id) ?? 0) + 1)
  for (const h of inUse) {
    count(inUseCount, h.deployable_id)
    if (h.reconfig_uuid !== null) count(reconfiguring, h.deployable_id)
    if (h.reconfig_uuid !== null || (h.clean_state !== null && !young(h)))
      count(cleaning, h.deployable_id)
    else if (h.clean_state === null) count(bound, h.deployable_id)
  }
  const held = new Set<number | null>([
    ...heldByArq.flatMap((a) => [a.deployable_id, a.handle_deployable_id]),
    ...inUse.filter((h) => h.reconfig_uuid === null).map((h) => h.deployable_id),
  ])
  const attrs = new Map<number, { key: string; value: string }[]>()
  for (const a of attributes) {
    const list = attrs.get(a.deployable_id) ?? []
    list.push({ key: a.key, value: a.value })
    attrs.set(a.deployable_id, list)
  }
  return deps.map((d) => ({
    id: d.id,
    name: d.name,
    rpUuid: d.rp_uuid,
    numAccelerators: d.num_accelerators,
    placementHash: d.placement_hash,
    removalPending: Number(d.removal_pending) === 1,
    held: held.has(d.id),
    cleaning: cleaning.get(d.id) ?? 0,
    reconfiguring: reconfiguring.get(d.id) ?? 0,
    inUse: inUseCount.get(d.id) ?? 0,
    bound: bound.get(d.id) ?? 0,
    device: {
      uuid: d.device_uuid,
      hostname: d.hostname,
      lifecycle: d.lifecycle,
      status: d.status,
      health: d.health,
    },
    attributes: attrs.get(d.id) ?? [],
  }))
}

/** Records what Placement now holds per deployable (null: no provider). Rows gone meanwhile are skipped. */
export async function updatePlacementHashes(
  db: Kysely<Database>,
  marks: readonly { id: number; hash: string | null }[],
): Promise<void> {
  for (const { id, hash } of marks) {
    await db.updateTable('deployables').set({ placement_hash: hash }).where('id', '=', id).execute()
  }
}

/** The host of a device, for the sync that follows a device change. */
export async function getDeviceHost(db: ReadDb, uuid: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('devices')
    .select('hostname')
    .where('uuid', '=', uuid)
    .executeTakeFirst()
  return row?.hostname
}
