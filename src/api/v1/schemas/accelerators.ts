/** The documentation of `/v1/accelerators` (src/api/v1/accelerators.ts, accelerators-create.ts). */
import { Type } from '@sinclair/typebox'
import { ACCELERATOR_SORT_KEYS } from '../../../db/reads/v1-accelerators.js'
import {
  guarded,
  guardedWrite,
  Links,
  NoBody,
  NullableString,
  NullableTimestamp,
  pagingQuery,
  QueryString,
  QueryUuid,
  Timestamp,
  Uuid,
  UuidParams,
  type RouteDoc,
} from '../../schemas/common.js'

const tags = ['v1 accelerators']

const AccSpecs = Type.Object(
  {
    remote: Type.Optional(Type.Union([Type.Literal(0), Type.Literal(1)])),
    num: Type.Optional(Type.Integer({ minimum: 0 })),
    device_type: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    acc_capability: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { additionalProperties: false },
)

const Accelerator = Type.Object({
  uuid: Uuid,
  name: Type.String(),
  description: Type.String(),
  type: Type.String(),
  device_type: Type.String(),
  capability: Type.String({ description: 'Comma-separated traits' }),
  acc_specs: Type.Record(Type.String(), Type.Unknown()),
  hostname: Type.String(),
  vendor_id: Type.String(),
  product_id: Type.String(),
  lifecycle: Type.String(),
  lifecycle_reason: NullableString,
  health: Type.String(),
  health_reason: NullableString,
  health_updated_at: NullableTimestamp,
  attached_to: NullableString,
  attachments: Type.Array(
    Type.Object({
      arq_uuid: Uuid,
      instance_uuid: NullableString,
      hostname: NullableString,
      api: Type.String(),
      state: Type.String(),
    }),
  ),
  created_at: Timestamp,
  updated_at: NullableTimestamp,
  links: Links,
})

const WithEtag = Type.Unsafe({
  ...Accelerator,
  description: 'The accelerator; `ETag` is the tag of its acc_specs (for If-Match)',
  headers: { etag: Type.String() },
})

export const ListAcceleratorsQuery = Type.Object({
  device_type: Type.Optional(QueryString()),
  hostname: Type.Optional(QueryString()),
  ...pagingQuery(ACCELERATOR_SORT_KEYS),
})

export const listAccelerators: RouteDoc = {
  summary: 'List accelerators',
  tags,
  querystring: ListAcceleratorsQuery,
  response: {
    200: Type.Object({
      accelerators: Type.Array(Accelerator),
      next: Type.Optional(Type.String({ description: 'The next page, when this one is full' })),
    }),
    ...guarded(400),
  },
}

export const DetachQuery = Type.Object({
  instance_uuid: Type.Optional(QueryUuid('Detach only while bound to this instance')),
})

export const getAccelerator: RouteDoc = {
  summary: 'Show an accelerator',
  tags,
  params: UuidParams,
  response: { 200: WithEtag, ...guarded(404) },
}

export const attachAccelerator: RouteDoc = {
  summary: 'Attach an accelerator to a VM (instance_uuid) or a host (hostname)',
  tags,
  params: UuidParams,
  body: Type.Object(
    {
      instance_uuid: Type.Optional(Uuid),
      hostname: Type.Optional(Type.String()),
      name: Type.Optional(Type.String({ description: "Must be the accelerator's name" })),
      uuid: Type.Optional(Uuid),
    },
    { additionalProperties: false, description: 'Exactly one of instance_uuid and hostname' },
  ),
  response: { 200: WithEtag, ...guardedWrite(404, 409) },
}

export const detachAccelerator: RouteDoc = {
  summary: 'Detach an accelerator (from one instance with ?instance_uuid=)',
  tags,
  params: UuidParams,
  querystring: DetachQuery,
  response: { 204: NoBody('Detached'), ...guarded(400, 404, 409) },
}

export const setAccSpecs: RouteDoc = {
  summary: "Replace an accelerator's acc_specs (If-Match: its ETag)",
  tags,
  params: UuidParams,
  headers: Type.Object({ 'if-match': Type.Optional(Type.String()) }),
  body: Type.Object({ acc_specs: AccSpecs }, { additionalProperties: false }),
  response: { 200: WithEtag, ...guardedWrite(404, 409) },
}

export const readyAccelerator: RouteDoc = {
  summary: "Mark an accelerator's device ready; the agent installs it",
  tags,
  params: UuidParams,
  response: { 200: WithEtag, ...guarded(404, 409) },
}

const created = NoBody('Registered; `Location` is the new accelerator')

export const createAccelerator: RouteDoc = {
  summary: 'Register a remote accelerator (no agent discovers it)',
  tags,
  response: {
    201: Type.Unsafe({ ...created, headers: { location: Type.String() } }),
    ...guardedWrite(409),
  },
}

export const createAcceleratorAt: RouteDoc = {
  ...createAccelerator,
  summary: 'Register a remote accelerator with the uuid of the path',
  params: UuidParams,
}
