/** The documentation of `/v2/deployables` and `/v2/attributes` (src/api/v2/deployables.ts, attributes.ts). */
import { Type } from '@sinclair/typebox'
import { DEPLOYABLE_SORT_KEYS } from '../../../db/reads/deployable-reads.js'
import {
  guarded,
  guardedWrite,
  Links,
  NoBody,
  NullableString,
  NullableTimestamp,
  nullable,
  pagingQuery,
  QueryString,
  Timestamp,
  Uuid,
  UuidParams,
  type RouteDoc,
} from '../../schemas/common.js'

export const ListDeployablesQuery = Type.Object(pagingQuery(DEPLOYABLE_SORT_KEYS))

export const ListAttributesQuery = Type.Object({
  deployable_id: Type.Optional(
    QueryString({ pattern: '^[0-9]{1,15}$' }, 'must be a non-negative integer, got {value}'),
  ),
  key: Type.Optional(QueryString()),
})

export const Deployable = Type.Object({
  uuid: Uuid,
  parent_id: nullable(Type.Integer()),
  root_id: nullable(Type.Integer()),
  name: Type.String(),
  num_accelerators: Type.Integer(),
  device_id: Type.Integer(),
  attributes_list: Type.String({
    description: 'Python json.dumps of a list of one-key objects, e.g. [{"rc": "FPGA"}]',
  }),
  rp_uuid: NullableString,
  driver_name: NullableString,
  bitstream_id: NullableString,
  created_at: Timestamp,
  updated_at: NullableTimestamp,
  links: Links,
})

export const Attribute = Type.Object({
  uuid: Uuid,
  deployable_id: Type.Integer(),
  key: Type.String(),
  value: Type.String(),
  created_at: Timestamp,
  updated_at: NullableTimestamp,
  links: Links,
})

export const listDeployables: RouteDoc = {
  summary: 'List deployables',
  tags: ['deployables'],
  querystring: ListDeployablesQuery,
  response: { 200: Type.Object({ deployables: Type.Array(Deployable) }), ...guarded(400, 406) },
}

export const getDeployable: RouteDoc = {
  summary: 'Show a deployable',
  tags: ['deployables'],
  params: UuidParams,
  response: { 200: Deployable, ...guarded(404, 406) },
}

const tags = ['attributes']

export const listAttributes: RouteDoc = {
  summary: 'List attributes',
  tags,
  querystring: ListAttributesQuery,
  response: { 200: Type.Object({ attributes: Type.Array(Attribute) }), ...guarded(400, 406) },
}

export const createAttribute: RouteDoc = {
  summary: 'Create an attribute of a deployable',
  tags,
  response: { 201: Attribute, ...guardedWrite(404, 406, 409) },
}

export const getAttribute: RouteDoc = {
  summary: 'Show an attribute',
  tags,
  params: UuidParams,
  response: { 200: Attribute, ...guarded(404, 406) },
}

export const deleteAttribute: RouteDoc = {
  summary: 'Delete an attribute',
  tags,
  params: UuidParams,
  response: { 204: NoBody('Deleted'), ...guarded(404, 406, 409) },
}

const ProgramOp = Type.Object(
  {
    path: Type.String({ maxLength: 255, description: 'Must be /program' }),
    op: Type.String({ maxLength: 32, description: 'Must be replace' }),
    value: Type.Array(
      Type.Object(
        { image_uuid: Type.String({ maxLength: 255, description: 'The Glance image to program' }) },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 1 },
    ),
  },
  { additionalProperties: false },
)

/** OpenStack Cyborg's body: a JSON-patch list of one op (what `deployable program` sends). */
export const ProgramBody = Type.Array(ProgramOp, { minItems: 1, maxItems: 1 })

export const programDeployable: RouteDoc = {
  summary: 'Program an FPGA deployable with a Glance image',
  description:
    "OpenStack Cyborg's program call, as `openstack accelerator deployable program` sends " +
    'it: `[{"path": "/program", "op": "replace", "value": [{"image_uuid": "<glance ' +
    "image>\"}]}]`. Admin only. The deployable's units are taken out of service, the host's " +
    "agent downloads the image (checked against Glance's hash and, when signed, its " +
    'signature: docs/fpga.md), programs the card and rediscovers it, and Placement holds the ' +
    'new function traits before the answer. 409 while any unit of the deployable is ' +
    'allocated, cleaning or being reconfigured, or when the agent has no image store ' +
    '([glance] endpoint_override) or a signed image no key manager ([barbican]): a ' +
    'configuration no retry changes; 400 for an image refused before the card was touched; ' +
    '502 when the programming tool failed on the card (its image is then forgotten); 503 when ' +
    'the agent did not answer (the units stay out of service until it rediscovers the card). ' +
    '200: the deployable as saved.',
  tags: ['deployables'],
  params: UuidParams,
  response: { 200: Deployable, ...guardedWrite(403, 404, 406, 409, 502, 503) },
}
