/**
 * The seed's v1 accelerators (api-v1-and-cli.md): a read view over the one inventory, never a
 * second copy. One accelerator is one deployable, with its device's type, vendor, host and
 * lifecycle, its attributes, and the instances its bound requests attach it to.
 */
import type { ReadDb } from '../core/connection.js'
import type { Attribute } from '../../domain/inventory/inventory.js'
import { NotFoundError } from '../../domain/errors.js'
import { listAttributesByDeployableIds } from './attribute-reads.js'
import { paginate, type PageOptions, type PageSpec } from '../core/pagination.js'

export const ACCELERATOR_SORT_KEYS = [
  'id',
  'uuid',
  'name',
  'num_accelerators',
  'created_at',
  'updated_at',
] as const
export type AcceleratorSortKey = (typeof ACCELERATOR_SORT_KEYS)[number]

export interface AcceleratorFilter extends PageOptions<AcceleratorSortKey> {
  /** The device's type (FPGA, GPU, QAT, …). */
  deviceType?: string
  hostname?: string
  /** Show only this project's attachments (a non-admin's view); absent: every project's. */
  project?: string
}

export interface Accelerator {
  uuid: string
  name: string
  numAccelerators: number
  deviceType: string
  vendor: string
  model: string
  hostname: string
  lifecycle: string
  lifecycleReason: string | null
  /** The device's health (ok | degraded | failed | unknown), why, and since when. */
  health: string
  healthReason: string | null
  healthUpdatedAt: string | null
  /** The device's PCI address, `dddd:bb:dd.f`; `remote:<uuid>` for a remote accelerator. */
  address: string
  /** A remote accelerator (registered through `POST /v1/accelerators`, device control path REMOTE). */
  remote: boolean
  attributes: Attribute[]
  /** Instances that bound requests attach it to (BindStarted or Bound), and `host:<name>` for host attachments. */
  attachedTo: string[]
  /** The requests that hold it (BindStarted or Bound), v1 attachments and v2 requests alike, in request order. */
  attachments: AcceleratorAttachment[]
  /** The device's uuid (what `ready` acts on). */
  deviceUuid: string
  /** The spec an operator stored through v1 (canonical JSON), or null: derived from the inventory. */
  accSpecs: string | null
  createdAt: string
  updatedAt: string | null
}

export interface AcceleratorAttachment {
  arqUuid: string
  instanceUuid: string | null
  hostname: string | null
  /** `v1` for an attach through /v1, `v2` for an accelerator request made from a device profile. */
  api: 'v1' | 'v2'
  state: string
}

const PAGE: PageSpec<AcceleratorSortKey> = {
  table: 'deployables',
  keys: ACCELERATOR_SORT_KEYS,
  nullable: ['updated_at'],
  notFoundCode: 'ACCELERATOR_NOT_FOUND',
}

const select = (db: ReadDb) =>
  db
    .selectFrom('deployables')
    .innerJoin('devices', 'devices.id', 'deployables.device_id')
    .select([
      'deployables.id',
      'deployables.uuid',
      'deployables.name',
      'deployables.num_accelerators',
      'deployables.created_at',
      'deployables.updated_at',
      'deployables.acc_specs',
      'devices.uuid as device_uuid',
      'devices.type as device_type',
      'devices.vendor',
      'devices.model',
      'devices.hostname',
      'devices.lifecycle',
      'devices.lifecycle_reason',
      'devices.health',
      'devices.health_reason',
      'devices.health_updated_at',
      'devices.cpid_type',
      'devices.cpid_info',
    ])

type Row = Awaited<ReturnType<ReturnType<typeof select>['execute']>>[number]

/** The rows with their attributes and holders; only `project`'s holders when it is given. */
async function withDetails(db: ReadDb, rows: Row[], project?: string): Promise<Accelerator[]> {
  if (rows.length === 0) return []
  const ids = rows.map((r) => r.id)
  const attributes = await listAttributesByDeployableIds(db, ids)
  let holders = db
    .selectFrom('accelerator_requests')
    .select(['deployable_id', 'uuid', 'instance_uuid', 'hostname', 'state', 'device_profile_id'])
    .where('deployable_id', 'in', ids)
    .where('state', 'in', ['BindStarted', 'Bound'])
  if (project !== undefined) holders = holders.where('project_id', '=', project)
  const bound = await holders.orderBy('id').execute()
  return rows.map((r) => {
    const mine = bound.filter((b) => b.deployable_id === r.id)
    const pci = JSON.parse(r.cpid_info) as Record<string, string>
    return {
      uuid: r.uuid,
      name: r.name,
      numAccelerators: r.num_accelerators,
      deviceType: r.device_type,
      vendor: r.vendor,
      model: r.model,
      hostname: r.hostname,
      lifecycle: r.lifecycle,
      lifecycleReason: r.lifecycle_reason,
      health: r.health,
      healthReason: r.health_reason,
      healthUpdatedAt: r.health_updated_at,
      address:
        r.cpid_type === 'REMOTE'
          ? `remote:${pci.uuid}`
          : `${pci.domain}:${pci.bus}:${pci.device}.${pci.function}`,
      remote: r.cpid_type === 'REMOTE',
      attributes: attributes.get(r.id) ?? [],
      attachedTo: [...new Set(mine.map((b) => b.instance_uuid ?? `host:${b.hostname ?? ''}`))],
      attachments: mine.map((b) => ({
        arqUuid: b.uuid,
        instanceUuid: b.instance_uuid,
        hostname: b.hostname,
        api: b.device_profile_id === null ? ('v1' as const) : ('v2' as const),
        state: b.state,
      })),
      deviceUuid: r.device_uuid,
      accSpecs: r.acc_specs,
      createdAt: r.created_at,
      updatedAt: r.updated_at,
    }
  })
}

/**
 * Lists accelerators, by default in id order.
 * @throws NotFoundError (code ACCELERATOR_NOT_FOUND) when the marker names none.
 */
export async function listAccelerators(
  db: ReadDb,
  filter: AcceleratorFilter = {},
): Promise<Accelerator[]> {
  let qb = select(db)
  if (filter.deviceType !== undefined) qb = qb.where('devices.type', '=', filter.deviceType)
  if (filter.hostname !== undefined) qb = qb.where('devices.hostname', '=', filter.hostname)
  qb = await paginate(db, qb, PAGE, filter)
  return withDetails(db, await qb.execute(), filter.project)
}

/**
 * One accelerator; with `project`, only that project's attachments (a non-admin's view).
 * @throws NotFoundError with code ACCELERATOR_NOT_FOUND.
 */
export async function getAccelerator(
  db: ReadDb,
  uuid: string,
  project?: string,
): Promise<Accelerator> {
  const row = await select(db).where('deployables.uuid', '=', uuid).executeTakeFirst()
  if (!row)
    throw new NotFoundError(`accelerator ${uuid} not found`, {
      code: 'ACCELERATOR_NOT_FOUND',
      details: { uuid },
    })
  return (await withDetails(db, [row], project))[0]!
}

/**
 * Does `project` hold anything of accelerator `uuid` (for `instance`, when given): a v1 attachment
 * or a v2 request, in any state? A non-admin's detach finds nothing to detach otherwise.
 */
export async function hasRequestFor(
  db: ReadDb,
  uuid: string,
  instance: string | undefined,
  project: string,
): Promise<boolean> {
  let qb = db
    .selectFrom('accelerator_requests')
    .innerJoin('deployables', 'deployables.id', 'accelerator_requests.deployable_id')
    .select('accelerator_requests.id')
    .where('deployables.uuid', '=', uuid)
    .where('accelerator_requests.project_id', '=', project)
  if (instance !== undefined) qb = qb.where('accelerator_requests.instance_uuid', '=', instance)
  return (await qb.limit(1).executeTakeFirst()) !== undefined
}
