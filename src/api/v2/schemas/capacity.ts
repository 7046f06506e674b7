/** The documentation of `GET /v2/capacity` (src/api/v2/capacity.ts). */
import { Type } from '@sinclair/typebox'
import { CAPACITY_GROUP_BY } from '../../../domain/capacity.js'
import {
  guarded,
  NullableString,
  nullable,
  QueryString,
  stringEnum,
  type RouteDoc,
} from '../../schemas/common.js'
import { withProblem } from '../../validation-errors.js'

const NAME = '[A-Z0-9_]{1,255}'
const NAME_PROBLEM = 'must be 1 to 255 of A-Z, 0-9 and _, got {value}'
/** A comma list of names; empty items are dropped. One way to match any text: no backtracking blow-up. */
const NameList = QueryString({ pattern: `^,*(?:${NAME}(?:,+|$))*$` })

export const CapacityQueryString = Type.Object({
  resource_class: Type.Optional(QueryString({ pattern: `^${NAME}$` }, NAME_PROBLEM)),
  hostname: Type.Optional(
    QueryString({ minLength: 1, maxLength: 255 }, 'must be 1 to 255 characters'),
  ),
  trait: Type.Optional(
    withProblem(
      Type.Union([NameList, Type.Array(NameList)], {
        description: 'Repeatable, or a comma list: rows whose traits include them all',
      }),
      `each ${NAME_PROBLEM}`,
    ),
  ),
  group_by: Type.Optional(stringEnum(CAPACITY_GROUP_BY)),
})

const Row = Type.Object({
  resource_class: NullableString,
  hostname: NullableString,
  traits: nullable(Type.Array(Type.String())),
  device_type: NullableString,
  total: Type.Integer(),
  used: Type.Integer(),
  reserved: Type.Integer(),
  fenced: Type.Integer(),
  cleaning: Type.Integer(),
  free: Type.Integer(),
})

export const getCapacity: RouteDoc = {
  summary: 'Attach handles counted by resource class, host and trait set, or by group_by (2.6)',
  description: 'Below 2.6 the route answers 404 naming the microversion it needs.',
  tags: ['capacity'],
  querystring: CapacityQueryString,
  response: {
    200: Type.Object({
      group_by: nullable(stringEnum(CAPACITY_GROUP_BY)),
      capacity: Type.Array(Row),
    }),
    ...guarded(400, 404, 406),
  },
}
