/**
 * The API's read model of accelerator requests (read-only): each ARQ with its device profile's
 * name and, when it holds one, its attach handle (type, info, uuid), in one query with joins; and the
 * row mapping (toArq) that the writers of src/db/arqs.ts and v1-attachments.ts share.
 */
import type { ReadDb } from '../core/connection.js'
import { ARQ_STATES, isResolved, type Arq, type ArqState } from '../../domain/arq.js'
import { NotFoundError } from '../../domain/errors.js'
import { jsonMemo } from '../core/json-memo.js'
import { paginate, type PageOptions, type PageSpec } from '../core/pagination.js'
import type { AcceleratorRequestRow } from '../core/schema.js'

/** Maps an `accelerator_requests` row to the domain type. */
export function toArq(row: AcceleratorRequestRow): Arq {
  return {
    id: row.id,
    uuid: row.uuid,
    state: row.state as ArqState,
    deviceProfileId: row.device_profile_id,
    deviceProfileGroupId: row.device_profile_group_id,
    projectId: row.project_id,
    hostname: row.hostname,
    deviceRpUuid: row.device_rp_uuid,
    instanceUuid: row.instance_uuid,
    attachHandleId: row.attach_handle_id,
    deployableId: row.deployable_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    boundAt: row.bound_at,
    bindId: row.bind_id,
  }
}

/** Columns an ARQ list may sort by. */
export const ARQ_SORT_KEYS = [
  'id',
  'uuid',
  'state',
  'hostname',
  'instance_uuid',
  'created_at',
  'updated_at',
] as const
export type ArqSortKey = (typeof ARQ_SORT_KEYS)[number]

const PAGE: PageSpec<ArqSortKey> = {
  table: 'accelerator_requests',
  keys: ARQ_SORT_KEYS,
  nullable: ['hostname', 'instance_uuid', 'updated_at'],
  notFoundCode: 'ARQ_NOT_FOUND',
}

/** The states Nova calls resolved: Bound, BindFailed, Deleting. */
export const RESOLVED_STATES: readonly ArqState[] = ARQ_STATES.filter(isResolved)
const UNRESOLVED_STATES: readonly ArqState[] = ARQ_STATES.filter((s) => !isResolved(s))

/** The handle an ARQ holds, as the API shows it. */
export interface ArqHandleView {
  /**
   * `attach_handle_uuid`: the handle's uuid, or for an MDEV handle the uuid of the allocation's
   * mdev (migration 0018), which Nova's libvirt driver creates the mdev with (docs/nova.md).
   */
  uuid: string
  type: string
  info: Readonly<Record<string, string>>
}

/** An ARQ with what the API shows of its profile and handle. */
export interface ArqDetail extends Arq {
  deviceProfileName: string
  /** The held handle, or null when the ARQ holds none. */
  attachHandle: ArqHandleView | null
}

/** Filters of `listArqDetails`; exact matches, combined with AND. */
export interface ArqDetailFilter extends PageOptions<ArqSortKey> {
  instanceUuid?: string
  /** Only this project's requests (a non-admin caller's view). */
  projectId?: string
  /** Only these states (an empty list matches none). */
  states?: readonly ArqState[]
}

/** An attach handle's info, parsed once per distinct text (see json-memo.ts). */
const parseInfo = jsonMemo<Record<string, string>>()

const selectDetails = (db: ReadDb) =>
  db
    .selectFrom('accelerator_requests')
    .innerJoin('device_profiles', 'device_profiles.id', 'accelerator_requests.device_profile_id')
    .leftJoin('attach_handles', 'attach_handles.id', 'accelerator_requests.attach_handle_id')
    .selectAll('accelerator_requests')
    .select([
      'device_profiles.name as dp_name',
      'attach_handles.uuid as ah_uuid',
      'attach_handles.attach_type as ah_type',
      'attach_handles.attach_info as ah_info',
      'attach_handles.mdev_uuid as ah_mdev_uuid',
    ])

type DetailRow = AcceleratorRequestRow & {
  dp_name: string
  ah_uuid: string | null
  ah_type: string | null
  ah_info: string | null
  ah_mdev_uuid: string | null
}

function toDetail(row: DetailRow): ArqDetail {
  const { dp_name, ah_uuid, ah_type, ah_info, ah_mdev_uuid, ...arq } = row
  const uuid = ah_type === 'MDEV' ? (ah_mdev_uuid ?? ah_uuid) : ah_uuid
  const attachHandle =
    uuid === null || ah_type === null || ah_info === null
      ? null
      : { uuid, type: ah_type, info: parseInfo(ah_info) }
  return { ...toArq(arq), deviceProfileName: dp_name, attachHandle }
}

/**
 * Lists ARQs (id order unless sorted otherwise) with their profile names and handles.
 * @throws NotFoundError (code ARQ_NOT_FOUND, `details.field` 'marker') for an unknown marker.
 */
export async function listArqDetails(
  db: ReadDb,
  filter: ArqDetailFilter = {},
): Promise<ArqDetail[]> {
  if (filter.states?.length === 0) return []
  let qb = selectDetails(db)
  if (filter.instanceUuid !== undefined)
    qb = qb.where('accelerator_requests.instance_uuid', '=', filter.instanceUuid)
  if (filter.projectId !== undefined)
    qb = qb.where('accelerator_requests.project_id', '=', filter.projectId)
  if (filter.states !== undefined)
    qb = qb.where('accelerator_requests.state', 'in', [...filter.states])
  const { limit, marker, sortKey, sortDir } = filter
  const markerProject = filter.projectId
  qb = await paginate(db, qb, PAGE, { limit, marker, sortKey, sortDir, markerProject })
  return (await qb.execute()).map(toDetail)
}

/** @throws NotFoundError with code ARQ_NOT_FOUND. */
export async function getArqDetail(db: ReadDb, uuid: string): Promise<ArqDetail> {
  const row = await selectDetails(db)
    .where('accelerator_requests.uuid', '=', uuid)
    .executeTakeFirst()
  if (!row)
    throw new NotFoundError(`accelerator request ${uuid} not found`, {
      code: 'ARQ_NOT_FOUND',
      details: { uuid },
    })
  return toDetail(row)
}

/**
 * True when some ARQ of the instance (of `projectId`'s, when given) is not resolved yet (Nova then
 * waits: 423). v1 attachments are not ARQs of v2's view, so they never make Nova wait.
 */
export async function hasUnresolvedArqs(
  db: ReadDb,
  instanceUuid: string,
  projectId?: string,
): Promise<boolean> {
  let qb = db
    .selectFrom('accelerator_requests')
    .select('id')
    .where('instance_uuid', '=', instanceUuid)
    .where('device_profile_id', 'is not', null)
    .where('state', 'in', [...UNRESOLVED_STATES])
  if (projectId !== undefined) qb = qb.where('project_id', '=', projectId)
  return (await qb.limit(1).executeTakeFirst()) !== undefined
}
