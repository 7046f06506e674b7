/** Domain objects → v2 API objects (snake_case, links, version-dependent fields). */
import { Type } from '@sinclair/typebox'
import type { Attribute, Deployable, Device } from '../../domain/inventory/inventory.js'
import {
  deviceStateOf,
  NO_UNITS,
  type DeviceState,
  type UnitCounts,
} from '../../domain/inventory/device-state.js'
import type { ArqDetail } from '../../db/reads/arq-views.js'
import type { DeviceProfile } from '../../domain/device-profile.js'
import { selfLink, type Link } from '../links.js'

export interface DeviceView {
  uuid: string
  type: string
  vendor: string
  model: string
  std_board_info: string | null
  vendor_board_info: string | null
  hostname: string
  status?: string
  lifecycle?: string
  lifecycle_reason?: string | null
  health?: string
  health_reason?: string | null
  health_updated_at?: string | null
  device_state?: DeviceState
  created_at: string
  updated_at: string | null
  links: Link[]
}

/**
 * `status` from microversion 2.3 on, `lifecycle` and `lifecycle_reason` from 2.4 on, health from 2.5
 * on, `device_state` (17.0.0's vocabulary, from the device's `units`) from 2.9 on.
 */
export function deviceView(
  d: Device,
  base: string,
  minor: number,
  units: UnitCounts = NO_UNITS,
): DeviceView {
  const view: DeviceView = {
    uuid: d.uuid,
    type: d.type,
    vendor: d.vendor,
    model: d.model,
    std_board_info: d.stdBoardInfo,
    vendor_board_info: d.vendorBoardInfo,
    hostname: d.hostname,
    created_at: d.createdAt,
    updated_at: d.updatedAt,
    links: [selfLink(base, 'devices', d.uuid)],
  }
  if (minor >= 3) view.status = d.status
  if (minor >= 4) {
    view.lifecycle = d.lifecycle
    view.lifecycle_reason = d.lifecycleReason
  }
  if (minor >= 5) {
    view.health = d.health
    view.health_reason = d.healthReason
    view.health_updated_at = d.healthUpdatedAt
  }
  if (minor >= 9) view.device_state = deviceStateOf(d, units)
  return view
}

const pyJson = (s: string) =>
  JSON.stringify(s).replace(
    /[\u0080-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  )

/**
 * `attributes_list` as OpenStack Cyborg renders it: Python's `json.dumps` of a list of single-key
 * dicts, i.e. `[{"rc": "FPGA"}, {"trait0": "CUSTOM_X"}]` (", " and ": " separators, ASCII only).
 */
export function attributesList(attributes: readonly Attribute[]): string {
  return `[${attributes.map((a) => `{${pyJson(a.key)}: ${pyJson(a.value)}}`).join(', ')}]`
}

export function deployableView(d: Deployable, attributes: readonly Attribute[], base: string) {
  return {
    uuid: d.uuid,
    parent_id: d.parentId,
    root_id: d.rootId,
    name: d.name,
    num_accelerators: d.numAccelerators,
    device_id: d.deviceId,
    attributes_list: attributesList(attributes),
    rp_uuid: d.rpUuid,
    driver_name: d.driverName,
    bitstream_id: d.bitstreamId,
    created_at: d.createdAt,
    updated_at: d.updatedAt,
    links: [
      selfLink(base, 'deployables', d.uuid),
      { href: `${base}/deployables/${d.uuid}`, rel: 'bookmark' },
    ],
  }
}

export function attributeView(a: Attribute, base: string) {
  return {
    uuid: a.uuid,
    deployable_id: a.deployableId,
    key: a.key,
    value: a.value,
    created_at: a.createdAt,
    updated_at: a.updatedAt,
    links: [selfLink(base, 'attributes', a.uuid)],
  }
}

export function deviceProfileView(p: DeviceProfile, base: string) {
  return {
    uuid: p.uuid,
    name: p.name,
    description: p.description,
    groups: p.groups,
    created_at: p.createdAt,
    updated_at: p.updatedAt,
    links: [selfLink(base, 'device_profiles', p.uuid)],
  }
}

/** An ARQ: the handle's type, uuid and info are shown only while it is Bound. */
export function arqView(a: ArqDetail, base: string) {
  const handle = a.state === 'Bound' ? a.attachHandle : null
  return {
    uuid: a.uuid,
    state: a.state,
    device_profile_name: a.deviceProfileName,
    device_profile_group_id: a.deviceProfileGroupId,
    hostname: a.hostname,
    device_rp_uuid: a.deviceRpUuid,
    instance_uuid: a.instanceUuid,
    project_id: a.projectId,
    attach_handle_type: handle?.type ?? '',
    attach_handle_uuid: handle?.uuid ?? null,
    attach_handle_info: handle?.info ?? {},
    created_at: a.createdAt,
    updated_at: a.updatedAt,
    links: [selfLink(base, 'accelerator_requests', a.uuid)],
  }
}

const nullableString = Type.Unsafe<string | null>({ type: ['string', 'null'] })

/** The response schema of the ARQ list: every field of `arqView`, so the serializer drops nothing. */
export const ArqListView = Type.Object({
  arqs: Type.Array(
    Type.Object({
      uuid: Type.String(),
      state: Type.String(),
      device_profile_name: Type.String(),
      device_profile_group_id: Type.Integer(),
      hostname: nullableString,
      device_rp_uuid: nullableString,
      instance_uuid: nullableString,
      project_id: nullableString,
      attach_handle_type: Type.String(),
      attach_handle_uuid: nullableString,
      attach_handle_info: Type.Record(Type.String(), Type.String()),
      created_at: Type.String(),
      updated_at: nullableString,
      links: Type.Array(Type.Object({ href: Type.String(), rel: Type.String() })),
      state_reason: Type.Optional(
        Type.Unsafe<string | null>({
          type: ['string', 'null'],
          description:
            'From 2.10: why a BindFailed or UnbindFailed request failed (its newest failure ' +
            "event's reason, while [events] retention_hours keeps it); null otherwise",
        }),
      ),
    }),
  ),
})
