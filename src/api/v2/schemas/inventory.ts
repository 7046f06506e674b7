/** The documentation of `/v2/deployables` and `/v2/attributes` (src/api/v2/deployables.ts, attributes.ts). */
import { Type } from '@sinclair/typebox'
import { DEPLOYABLE_SORT_KEYS } from '../../../db/deployables.js'
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
