/** The documentation of `/v2/accelerator_requests` (src/api/v2/arqs.ts); bodies are validated by their schemas there. */
import { Type } from '@sinclair/typebox'
import { ARQ_SORT_KEYS } from '../../../db/reads/arq-views.js'
import {
  guarded,
  guardedWrite,
  NoBody,
  pagingQuery,
  QueryString,
  QueryUuid,
  stringEnum,
  UUID_PATTERN_ANY_CASE_BODY,
  UuidParams,
  type RouteDoc,
} from '../../schemas/common.js'
import { withProblem } from '../../validation-errors.js'
import { ArqListView } from '../views.js'

const tags = ['accelerator requests']
const Arq = ArqListView.properties.arqs.items

export const createArqs: RouteDoc = {
  summary: "Create the accelerator requests of a device profile's groups",
  tags,
  response: {
    201: Type.Object({ arqs: Type.Array(Arq) }),
    ...guardedWrite(404, 406, 409),
  },
}

export const ListArqsQuery = Type.Object({
  instance: Type.Optional(QueryUuid()),
  bind_state: Type.Optional(
    withProblem(
      stringEnum(['resolved'], {
        description: 'With instance: 423 while an ARQ of the instance is not resolved',
      }),
      'must be "resolved", got {value}',
    ),
  ),
  ...pagingQuery(ARQ_SORT_KEYS),
})

const UUID_ITEM = UUID_PATTERN_ANY_CASE_BODY
export const DeleteArqsQuery = Type.Object({
  instance: Type.Optional(QueryUuid()),
  arqs: Type.Optional(
    QueryString(
      { pattern: `^${UUID_ITEM}(,${UUID_ITEM})*,?$`, description: 'Comma-separated uuids' },
      'must be a comma-separated list of accelerator request UUIDs, got {value}',
    ),
  ),
})

export const listArqs: RouteDoc = {
  summary: 'List accelerator requests (an admin sees every project)',
  tags,
  querystring: ListArqsQuery,
  response: {
    200: ArqListView,
    423: NoBody('Locked: the instance has an ARQ still binding (nova waits and asks again)'),
    ...guarded(400, 406),
  },
}

const bindOrUnbind =
  'A map of ARQ uuid to JSON-Patch ops: `add` /hostname, /instance_uuid, /device_rp_uuid ' +
  '(and /project_id from 2.1) binds; `remove` ops unbind. Needs a service token.'

export const patchArqs: RouteDoc = {
  summary: 'Bind or unbind accelerator requests',
  description: bindOrUnbind,
  tags,
  response: {
    202: NoBody('Bound or unbound (or the binding failed: see the ARQ state)'),
    ...guardedWrite(404, 406, 409),
  },
}

export const deleteArqs: RouteDoc = {
  summary: "Delete an instance's accelerator requests, or the ones listed",
  description: 'Give exactly one of ?instance=<uuid> (a service token) or ?arqs=<uuid>,<uuid>.',
  tags,
  querystring: DeleteArqsQuery,
  response: { 204: NoBody('Deleted'), ...guarded(400, 404, 406, 409) },
}

export const getArq: RouteDoc = {
  summary: 'Show an accelerator request',
  tags,
  params: UuidParams,
  response: { 200: Arq, ...guarded(404, 406) },
}

export const patchArq: RouteDoc = {
  summary: 'Bind or unbind one accelerator request (the body is about it alone)',
  description: bindOrUnbind,
  tags,
  params: UuidParams,
  response: {
    202: NoBody('Bound or unbound (or the binding failed: see the ARQ state)'),
    ...guardedWrite(404, 406, 409),
  },
}

export const deleteArq: RouteDoc = {
  summary: 'Delete an accelerator request (a bound one needs a service token)',
  tags,
  params: UuidParams,
  response: { 204: NoBody('Deleted'), ...guarded(404, 406, 409) },
}
