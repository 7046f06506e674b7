/**
 * The custody record of a program or configure (docs/custody.md): the device, who asked, and what
 * was done (`detail`, canonical JSON). It carries no allocation: the device was held by no tenant.
 */
import type { Kysely } from 'kysely'
import type { Database } from './core/schema.js'
import { appendCustodyRecords } from './custody.js'
import { deviceSerialOf } from './device-identities.js'
import type { ReconfigTarget } from './reconfig-fence.js'
import type { CustodyKind } from '../domain/custody/custody.js'

export interface Who {
  userId: string | null
  projectId: string | null
}

/** Appends the record; resolves with its uuid. */
export async function appendReconfigRecord(
  trx: Kysely<Database>,
  record: {
    uuid: string
    kind: typeof CustodyKind.Program | typeof CustodyKind.Configure
    target: ReconfigTarget
    deployableUuid: string | null
    who: Who
    detail: Record<string, unknown>
    at: string
  },
): Promise<string> {
  const { target } = record
  await appendCustodyRecords(trx, [
    {
      uuid: record.uuid,
      kind: record.kind,
      allocationUuid: null,
      arqUuid: null,
      deviceUuid: target.deviceUuid,
      deployableUuid: record.deployableUuid,
      handleUuid: null,
      deviceSerial: await deviceSerialOf(trx, target.deviceUuid),
      hostname: target.hostname,
      ...record.who,
      instanceUuid: null,
      allocatedVia: null,
      boundAt: null,
      releasedAt: null,
      cleanMethod: null,
      cleanResult: null,
      cleanEvidenceSha256: null,
      cleanedAt: null,
      detail: JSON.stringify(record.detail),
      createdAt: record.at,
    },
  ])
  return record.uuid
}
