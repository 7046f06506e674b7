/** The documentation of `GET /v2/capacity` (src/api/v2/capacity.ts). */
import { Type } from '@sinclair/typebox'
import { CAPACITY_GROUP_BY } from '../../../domain/capacity.js'
import {
  guarded,
  NullableString,
  nullable,
  stringEnum,
  type RouteDoc,
} from '../../schemas/common.js'

const Name = Type.String({ pattern: '^[A-Z0-9_]{1,255}$' })

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
  querystring: Type.Object({
    resource_class: Type.Optional(Name),
    hostname: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    trait: Type.Optional(
      Type.Union([Type.String(), Type.Array(Type.String())], {
        description: 'Repeatable, or a comma list: rows whose traits include them all',
      }),
    ),
    group_by: Type.Optional(stringEnum(CAPACITY_GROUP_BY)),
  }),
  response: {
    200: Type.Object({
      group_by: nullable(stringEnum(CAPACITY_GROUP_BY)),
      capacity: Type.Array(Row),
    }),
    ...guarded(400, 404, 406),
  },
}
