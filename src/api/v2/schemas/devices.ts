/** The documentation of `/v2/devices` (src/api/v2/devices.ts). */
import { Type } from '@sinclair/typebox'
import { DEVICE_SORT_KEYS } from '../../../db/reads/device-reads.js'
import { DeviceState } from '../../../domain/inventory/device-state.js'
import { DeviceType, Health, Lifecycle } from '../../../domain/inventory/inventory.js'
import { withProblem } from '../../validation-errors.js'
import {
  guarded,
  guardedWrite,
  Links,
  NoBody,
  NullableString,
  NullableTimestamp,
  pagingQuery,
  QueryString,
  stringEnum,
  Timestamp,
  Uuid,
  UuidParams,
  type RouteDoc,
} from '../../schemas/common.js'

const tags = ['devices']

export const Device = Type.Object({
  uuid: Uuid,
  type: stringEnum(Object.values(DeviceType)),
  vendor: Type.String({ description: 'PCI vendor id, e.g. 10de' }),
  model: Type.String(),
  std_board_info: NullableString,
  vendor_board_info: NullableString,
  hostname: Type.String(),
  status: Type.Optional(stringEnum(['enabled', 'maintaining'], { description: 'From 2.3' })),
  lifecycle: Type.Optional(stringEnum(Object.values(Lifecycle), { description: 'From 2.4' })),
  lifecycle_reason: Type.Optional(NullableString),
  health: Type.Optional(stringEnum(Object.values(Health), { description: 'From 2.5' })),
  health_reason: Type.Optional(NullableString),
  health_updated_at: Type.Optional(NullableTimestamp),
  device_state: Type.Optional(
    stringEnum(Object.values(DeviceState), {
      description:
        "From 2.9: OpenStack Cyborg 17.0.0's device_state, derived from the units' cleaning and allocation and the health",
    }),
  ),
  created_at: Timestamp,
  updated_at: NullableTimestamp,
  links: Links,
})

/** Checked at every microversion; `health` filters from 2.5 (below, it is ignored). */
export const ListDevicesQuery = Type.Object({
  type: Type.Optional(QueryString()),
  vendor: Type.Optional(QueryString()),
  hostname: Type.Optional(QueryString()),
  health: Type.Optional(stringEnum(Object.values(Health), { description: 'From 2.5' })),
  ...pagingQuery(DEVICE_SORT_KEYS),
})

export const listDevices: RouteDoc = {
  summary: 'List devices',
  tags,
  querystring: ListDevicesQuery,
  response: { 200: Type.Object({ devices: Type.Array(Device) }), ...guarded(400, 406) },
}

export const getDevice: RouteDoc = {
  summary: 'Show a device',
  tags,
  params: UuidParams,
  response: { 200: Device, ...guarded(404, 406) },
}

export const setDeviceStatus = (status: 'disable' | 'enable'): RouteDoc => ({
  summary:
    status === 'disable'
      ? 'Put a device in maintenance (status maintaining: not offered)'
      : 'Enable a device (status enabled)',
  tags,
  params: UuidParams,
  response: {
    200: NoBody('Done; no body, as OpenStack Cyborg answers'),
    ...guarded(404, 406, 409),
  },
})

export const readyDevice: RouteDoc = {
  summary: 'Mark a device ready; the agent installs it (2.4)',
  description: 'Below 2.4 the route answers 404 naming the microversion it needs.',
  tags,
  params: UuidParams,
  response: { 200: Device, ...guarded(404, 406, 409) },
}

/**
 * The body of `POST /devices/{uuid}/clean` (validating: the route's `schema.body`); an absent body
 * counts as `{}`. Unknown fields are refused.
 */
export const CleanDeviceBody = Type.Object(
  {
    force_in_service: Type.Optional(
      withProblem(
        Type.Boolean({
          description:
            'Put the units back in service without a clean (any running clean is stopped first, by ' +
            "the host's agent), recorded in the custody ledger as an override by the caller; default " +
            'false',
        }),
        'must be true or false, got {value}',
      ),
    ),
  },
  { additionalProperties: false },
)

export const cleanDevice: RouteDoc = {
  summary: "Clean a device's released units again, or put them back in service (2.8)",
  description:
    "Re-runs the clean of the device's units left cleaning or whose clean failed (the host's " +
    'agent is asked again now), or with force_in_service puts them back in service without ' +
    'one, recorded in the custody ledger as an override by the caller (docs/cleaning.md). The ' +
    'body is optional. 202: the clean was asked for (or the units were put back); its result ' +
    "is in the custody ledger. A force first has the host's agent stop any clean of the units " +
    'and puts back only those it confirmed; 503 (CLEAN_ABORT_UNCONFIRMED) naming the host ' +
    'when it did not answer, 409 (CLEAN_ABORT_UNSUPPORTED) when it is too old to stop a ' +
    'clean: those units stay out of service. Below 2.8 the route answers 404 naming the ' +
    'microversion it needs.',
  tags,
  params: UuidParams,
  response: {
    202: Type.Object({
      device: Uuid,
      units: Type.Array(Uuid, {
        description:
          'The units (attach handle uuids) asked to clean again, or put back in service with force_in_service',
      }),
      forced: Type.Boolean({ description: 'Whether force_in_service was given' }),
    }),
    ...guardedWrite(404, 406, 409, 503),
  },
}

export const ConfigureDeviceBody = Type.Object(
  {
    sriov_numvfs: Type.Optional(
      withProblem(
        Type.Integer({
          minimum: 0,
          maximum: 65535,
          description: "The PF's SR-IOV VF count (0 to its sriov_totalvfs)",
        }),
        'must be an integer from 0 to 65535, got {value}',
      ),
    ),
    vgpu_type: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: 'The mdev type every vGPU of this pGPU uses (nvidia-471), or * for any',
      }),
    ),
  },
  { additionalProperties: false },
)

const Layout = Type.Object({
  sriov_numvfs: Type.Optional(Type.Integer()),
  vgpu_type: Type.Optional(Type.String()),
  vgpu_types: Type.Optional(Type.Array(Type.String())),
})

export const configureDevice: RouteDoc = {
  summary: 'Re-partition a device: its SR-IOV VF count or vGPU type (2.8)',
  description:
    "Changes how the device is divided, through its host's agent and driver " +
    '(docs/drivers.md, "Configure"): exactly one of sriov_numvfs and vgpu_type. Admin only. ' +
    'Every unit is taken out of service meanwhile; the agent rediscovers the device, and ' +
    "Placement's providers and inventories match the new layout before the answer. 409 " +
    'naming the holders while any unit is allocated or cleaning (or Placement has allocations ' +
    'against the device); 400 naming the field for a value the device cannot take; 502 when ' +
    'the host refused the change part-way (the old layout is put back, or the device is ' +
    'fenced with the reason); 503 when the agent did not answer. Below 2.8 the route answers ' +
    '404 naming the microversion it needs.',
  tags,
  params: UuidParams,
  response: {
    200: Type.Object({
      device: Uuid,
      operation: Uuid,
      changed: Type.Boolean({ description: 'False when the device already had that layout' }),
      previous: Layout,
      applied: Layout,
    }),
    ...guardedWrite(403, 404, 406, 409, 502, 503),
  },
}
