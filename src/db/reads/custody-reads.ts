/**
 * The custody ledger as the API reads it (`GET /v2/custody[/{uuid}]`, docs/custody.md): records,
 * sealed or not, filtered and paged. Read-only; the table and its writes are src/db/custody.ts.
 */
import { sql } from 'kysely'
import { CUSTODY_KINDS } from '../../domain/custody/custody.js'
import { NotFoundError } from '../../domain/errors.js'
import type { ReadDb } from '../core/connection.js'
import { toStored, type StoredCustodyRecord } from './custody-rows.js'
import { paginate, type PageOptions } from '../core/pagination.js'

export const CUSTODY_SORT_KEYS = ['id', 'created_at', 'released_at'] as const
export type CustodySortKey = (typeof CUSTODY_SORT_KEYS)[number]

export interface CustodyFilter extends PageOptions<CustodySortKey> {
  deviceUuid?: string | undefined
  projectId?: string | undefined
  instanceUuid?: string | undefined
  kind?: string | undefined
  /** Records released (checkpoints: written) at or after / before these timestamps. */
  since?: string | undefined
  until?: string | undefined
}

/** Records, sealed or not, filtered and paged (id order by default). */
export async function listCustody(
  db: ReadDb,
  filter: CustodyFilter = {},
): Promise<StoredCustodyRecord[]> {
  let qb = db.selectFrom('custody_records').selectAll()
  if (filter.deviceUuid !== undefined) qb = qb.where('device_uuid', '=', filter.deviceUuid)
  if (filter.projectId !== undefined) qb = qb.where('project_id', '=', filter.projectId)
  if (filter.instanceUuid !== undefined) qb = qb.where('instance_uuid', '=', filter.instanceUuid)
  if (filter.kind !== undefined && (CUSTODY_KINDS as readonly string[]).includes(filter.kind))
    qb = qb.where('kind', '=', filter.kind)
  const at = sql<string>`coalesce(released_at, created_at)`
  if (filter.since !== undefined) qb = qb.where(at, '>=', filter.since)
  if (filter.until !== undefined) qb = qb.where(at, '<', filter.until)
  qb = await paginate(
    db,
    qb,
    {
      table: 'custody_records',
      keys: CUSTODY_SORT_KEYS,
      nullable: ['released_at'],
      notFoundCode: 'CUSTODY_RECORD_NOT_FOUND',
    },
    { ...filter, markerProject: filter.projectId ?? undefined },
  )
  return (await qb.execute()).map(toStored)
}

/** One record by uuid. @throws NotFoundError */
export async function getCustody(db: ReadDb, uuid: string): Promise<StoredCustodyRecord> {
  const row = await db
    .selectFrom('custody_records')
    .selectAll()
    .where('uuid', '=', uuid)
    .executeTakeFirst()
  if (!row)
    throw new NotFoundError(`custody record ${uuid} not found`, {
      code: 'CUSTODY_RECORD_NOT_FOUND',
      details: { uuid },
    })
  return toStored(row)
}
