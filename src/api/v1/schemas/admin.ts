/**
 * The documentation of the administration routes under `/v1`: drivers and discovery
 * (src/api/v1/drivers.ts, whose bodies are validated by their schemas there), backend services,
 * status and telemetry.
 */
import { Type } from '@sinclair/typebox'
import {
  guarded,
  guardedWrite,
  NullableString,
  nullable,
  QueryString,
  QueryUuid,
  Timestamp,
  type RouteDoc,
} from '../../schemas/common.js'
import { withProblem } from '../../validation-errors.js'

const Status = Type.String({ description: 'ok, error, unreachable or skipped' })
const Any = Type.Record(Type.String(), Type.Unknown())
export const HostnameQuery = Type.Object({ hostname: Type.Optional(QueryString()) })
const NameParams = Type.Object({ name: Type.String({ description: 'A driver name or alias' }) })

const Driver = Type.Object({
  hostname: Type.String(),
  name: Type.String(),
  aliases: Type.Array(Type.String()),
  version: Type.String(),
  status: Type.String({ description: 'installed, enabled or disabled' }),
  enabled: Type.Boolean(),
  devices: Type.Integer(),
  last_discovery: nullable(
    Type.Object({ at: Timestamp, ok: Type.Boolean(), error: NullableString }),
  ),
})

const Outcome = Type.Object({
  hostname: Type.String(),
  status: Status,
  enabled: nullable(Type.Boolean()),
  options: nullable(Type.Record(Type.String(), Type.String())),
  report: nullable(Any),
  error: NullableString,
})

const Item = Type.Object({
  name: Type.String(),
  device_type: Type.String(),
  address: Type.String(),
  fields: Type.Optional(Type.Array(Type.String())),
})

export const listDrivers: RouteDoc = {
  summary: "List every agent's drivers",
  tags: ['drivers'],
  querystring: HostnameQuery,
  response: {
    200: Type.Object({
      drivers: Type.Array(Driver),
      hosts: Type.Array(
        Type.Object({
          hostname: Type.String(),
          status: Status,
          last_seen: nullable(Timestamp),
          error: NullableString,
        }),
      ),
    }),
    ...guarded(400),
  },
}

const actionAnswer = Type.Object({ driver: Type.String(), hosts: Type.Array(Outcome) })

export const driverAction = (verb: 'install' | 'uninstall'): RouteDoc => ({
  summary: `${verb === 'install' ? 'Enable' : 'Disable'} a driver on one agent or on every agent`,
  tags: ['drivers'],
  params: NameParams,
  response: { 200: actionAnswer, ...guardedWrite(404, 409) },
})

export const updateDriver: RouteDoc = {
  summary: "Override a driver's options at run time",
  tags: ['drivers'],
  params: NameParams,
  response: { 200: actionAnswer, ...guardedWrite(404, 409) },
}

export const runDiscovery: RouteDoc = {
  summary: 'Run discovery now on one agent or on every agent',
  tags: ['discovery'],
  response: {
    200: Type.Object({
      hosts: Type.Array(
        Type.Object({
          hostname: Type.String(),
          status: Status,
          added: Type.Array(Item),
          changed: Type.Array(Item),
          removed: Type.Array(Item),
          report: nullable(Any),
          error: NullableString,
        }),
      ),
    }),
    ...guardedWrite(404),
  },
}

export const BackendServicesQuery = Type.Object({
  hostname: Type.Optional(QueryString()),
  backend: Type.Optional(
    withProblem(QueryUuid('A device uuid'), 'must be a device UUID, got {value}'),
  ),
})

export const listBackendServices: RouteDoc = {
  summary: 'The services each backend (device) offers, as last discovered',
  tags: ['backend services'],
  querystring: BackendServicesQuery,
  response: {
    200: Type.Object({
      services: Type.Array(
        Type.Object({
          hostname: Type.String(),
          backend: Type.String(),
          backend_type: Type.String(),
          vendor: Type.String(),
          model: Type.String(),
          address: Type.String(),
          lifecycle: Type.String(),
          deployable: Type.String(),
          deployable_uuid: Type.String(),
          driver: NullableString,
          service: Type.String(),
          description: Type.String(),
          resource_class: Type.String(),
          units: Type.Integer(),
          removal_pending: Type.Boolean(),
        }),
      ),
    }),
    ...guarded(400, 404),
  },
}

export const getStatus: RouteDoc = {
  summary: 'Health of the Cyborg processes from their heartbeats',
  tags: ['status'],
  response: {
    200: Type.Object({
      services: Type.Array(
        Type.Object({
          host: Type.String(),
          binary: Type.String(),
          version: Type.String(),
          state: Type.String({ description: 'up or down' }),
          last_seen: Timestamp,
          seconds_since_last_seen: Type.Integer(),
        }),
      ),
      down_after_seconds: Type.Number(),
    }),
    ...guarded(),
  },
}

export const getTelemetry: RouteDoc = {
  summary: "The latest usage sample of each device, as this API process heard the agents'",
  tags: ['telemetry'],
  querystring: HostnameQuery,
  response: {
    200: Type.Object({
      devices: Type.Array(
        Type.Object({
          hostname: Type.String(),
          control_path: Type.String(),
          device_uuid: NullableString,
          type: NullableString,
          vendor: NullableString,
          time: NullableString,
          received_at: Type.String(),
          age_seconds: Type.Integer(),
          values: Any,
        }),
      ),
    }),
    ...guarded(400),
  },
}
