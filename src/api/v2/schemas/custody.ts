/** The documentation of `/v2/custody` (src/api/v2/custody.ts; docs/custody.md). */
import { Type } from '@sinclair/typebox'
import { CUSTODY_KINDS } from '../../../domain/custody/custody.js'
import {
  guarded,
  NullableString,
  NullableTimestamp,
  nullable,
  pagingQuery,
  QueryString,
  QueryUuid,
  stringEnum,
  Timestamp,
  Uuid,
  UuidParams,
  type RouteDoc,
} from '../../schemas/common.js'

const tags = ['custody']

/** One ledger record; seq, prev_hash and hash are null until the conductor seals it. */
export const CustodyRecordView = Type.Object({
  uuid: Uuid,
  seq: nullable(Type.Integer({ description: 'Place in the hash chain; null until sealed' })),
  prev_hash: NullableString,
  hash: NullableString,
  kind: stringEnum(CUSTODY_KINDS),
  allocation_uuid: NullableString,
  arq_uuid: NullableString,
  device_uuid: NullableString,
  deployable_uuid: NullableString,
  handle_uuid: NullableString,
  device_serial: NullableString,
  hostname: NullableString,
  project_id: NullableString,
  user_id: NullableString,
  instance_uuid: NullableString,
  allocated_via: nullable(stringEnum(['nova_v2', 'standalone_v2', 'v1_attach'])),
  bound_at: NullableTimestamp,
  released_at: NullableTimestamp,
  clean_method: NullableString,
  clean_result: NullableString,
  clean_evidence_sha256: NullableString,
  cleaned_at: NullableTimestamp,
  detail: nullable(Type.String({ description: 'Canonical JSON (a checkpoint: its signed data)' })),
  created_at: Timestamp,
})

/** The shape of an RFC 3339 time (or full-date); its calendar is checked by timeQuery (src/api/query.ts). */
const TIME =
  '^[0-9]{4}-[0-9]{2}-[0-9]{2}([Tt][0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2}))?$'

export const ListCustodyQuery = Type.Object({
  device_uuid: Type.Optional(QueryUuid('Records of this device')),
  project_id: Type.Optional(
    QueryString(
      { minLength: 1, description: 'Records of this project (an admin: any)' },
      'must not be empty',
    ),
  ),
  instance_uuid: Type.Optional(
    QueryString({ minLength: 1, description: 'Records of this instance' }, 'must not be empty'),
  ),
  kind: Type.Optional(stringEnum(CUSTODY_KINDS)),
  since: Type.Optional(
    QueryString(
      {
        pattern: TIME,
        description:
          'Released (a checkpoint: written) at or after: an RFC 3339 time (2026-01-31T12:00:00Z) or date (2026-01-31, midnight UTC)',
      },
      'must be an RFC 3339 time such as 2026-01-31T12:00:00Z or 2026-01-31 (a date-time needs Z or an offset ±hh:mm), got {value}',
    ),
  ),
  until: Type.Optional(
    QueryString(
      {
        pattern: TIME,
        description: 'Released (a checkpoint: written) before: an RFC 3339 time or date',
      },
      'must be an RFC 3339 time such as 2026-01-31T12:00:00Z or 2026-01-31 (a date-time needs Z or an offset ±hh:mm), got {value}',
    ),
  ),
  ...pagingQuery(['id', 'created_at', 'released_at']),
})

export const listCustody: RouteDoc = {
  summary: 'Custody ledger records (2.8)',
  description:
    'One record per allocation interval of a device, plus clean, override and checkpoint ' +
    'records, in one hash chain (docs/custody.md). An admin sees every record; a project ' +
    "reader only their project's. Oldest first; default page 1000. Below 2.8 the route " +
    'answers 404 naming the microversion it needs.',
  tags,
  querystring: ListCustodyQuery,
  response: {
    200: Type.Object({ custody_records: Type.Array(CustodyRecordView) }),
    ...guarded(400, 403, 404, 406),
  },
}

export const getCustody: RouteDoc = {
  summary: 'One custody ledger record (2.8)',
  tags,
  params: UuidParams,
  response: { 200: CustodyRecordView, ...guarded(403, 404, 406) },
}
