/**
 * Custody records (docs/custody.md), read: a `custody_records` row as record fields and as a stored
 * record (the API's pages, the verifier, the sealer), and the newest sealed checkpoint. Appending and
 * sealing are src/db/custody.ts.
 */
import type { Selectable } from 'kysely'
import {
  CustodyKind,
  type AllocatedVia,
  type CustodyFields,
  type CustodyRecord,
} from '../../domain/custody/custody.js'
import type { ReadDb } from '../core/connection.js'
import type { CustodyRecordsTable } from '../core/schema.js'

/** A `custody_records` row as the database returns it. */
export type CustodyRow = Selectable<CustodyRecordsTable>

/** A row's record fields. */
export function toFields(r: CustodyRow): CustodyFields {
  return {
    uuid: r.uuid,
    kind: r.kind as CustodyFields['kind'],
    allocationUuid: r.allocation_uuid,
    arqUuid: r.arq_uuid,
    deviceUuid: r.device_uuid,
    deployableUuid: r.deployable_uuid,
    handleUuid: r.handle_uuid,
    deviceSerial: r.device_serial,
    hostname: r.hostname,
    projectId: r.project_id,
    userId: r.user_id,
    instanceUuid: r.instance_uuid,
    allocatedVia: r.allocated_via as AllocatedVia | null,
    boundAt: r.bound_at,
    releasedAt: r.released_at,
    cleanMethod: r.clean_method,
    cleanResult: r.clean_result,
    cleanEvidenceSha256: r.clean_evidence_sha256,
    cleanedAt: r.cleaned_at,
    detail: r.detail,
    createdAt: r.created_at,
  }
}

/** A stored record: sealed (seq and hashes set) or not yet (null). */
export interface StoredCustodyRecord extends CustodyFields {
  id: number
  seq: number | null
  prevHash: string | null
  hash: string | null
}

/** A row as the API and the sealer see it. */
export function toStored(r: CustodyRow): StoredCustodyRecord {
  return {
    id: Number(r.id),
    seq: r.seq === null ? null : Number(r.seq),
    prevHash: r.prev_hash,
    hash: r.hash,
    ...toFields(r),
  }
}

/** The newest sealed checkpoint record, if any (where a pruned chain starts from). */
export async function getLatestCheckpoint(db: ReadDb): Promise<CustodyRecord | undefined> {
  const row = await db
    .selectFrom('custody_records')
    .selectAll()
    .where('kind', '=', CustodyKind.Checkpoint)
    .where('seq', 'is not', null)
    .orderBy('seq', 'desc')
    .limit(1)
    .executeTakeFirst()
  return (
    row && {
      ...toFields(row),
      seq: Number(row.seq),
      prevHash: row.prev_hash ?? '',
      hash: row.hash ?? '',
    }
  )
}
