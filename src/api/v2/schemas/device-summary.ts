/** The documentation of `GET /v2/devices/summary` (2.10; src/api/v2/device-summary.ts). */
import { Type } from '@sinclair/typebox'
import {
  guarded,
  NullableString,
  NullableTimestamp,
  QueryString,
  Uuid,
  type RouteDoc,
} from '../../schemas/common.js'

/** The most unhealthy devices one summary lists. */
export const MAX_UNHEALTHY_LIMIT = 1000

export const DeviceSummaryQuery = Type.Object({
  unhealthy_limit: Type.Optional(
    QueryString(
      {
        pattern: '^(0|[1-9][0-9]{0,2}|1000)$',
        description: `How many unhealthy devices to list, 0 to ${MAX_UNHEALTHY_LIMIT} (default 100)`,
      },
      `must be an integer from 0 to ${MAX_UNHEALTHY_LIMIT}, got {value}`,
    ),
  ),
})

const Counts = (what: string) =>
  Type.Record(Type.String(), Type.Integer(), { description: `How many devices have each ${what}` })

export const DeviceSummaryView = Type.Object({
  total: Type.Integer({ description: 'Every device' }),
  by_type: Counts('type'),
  by_lifecycle: Counts('lifecycle'),
  by_status: Counts('status'),
  by_health: Counts('health'),
  hosts: Type.Array(
    Type.Object({
      hostname: Type.String(),
      devices: Type.Integer(),
      unhealthy: Type.Integer({ description: 'Devices whose health is not ok' }),
    }),
    { description: 'Every host with devices, by name' },
  ),
  unhealthy: Type.Object({
    total: Type.Integer({ description: 'Every device whose health is not ok' }),
    devices: Type.Array(
      Type.Object({
        uuid: Uuid,
        hostname: Type.String(),
        type: Type.String(),
        health: Type.String(),
        health_reason: NullableString,
        health_updated_at: NullableTimestamp,
        health_since: Type.String({
          description:
            'Since when it has this health: health_updated_at, or when the device was first recorded if it never changed',
        }),
      }),
      { description: 'The first unhealthy_limit of them, by health_since, newest first' },
    ),
  }),
})

export const getDeviceSummary: RouteDoc = {
  summary: 'Devices counted by type, lifecycle, status, health and host; the unhealthy ones (2.10)',
  description:
    'A few grouped reads whatever the fleet size, for dashboards. Below 2.10 the route answers ' +
    '404 naming the microversion it needs.',
  tags: ['devices'],
  querystring: DeviceSummaryQuery,
  response: { 200: DeviceSummaryView, ...guarded(400, 404, 406) },
}
