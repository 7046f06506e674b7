/** The documentation of `GET /v2/devices/{uuid}/attach_handles` (src/api/v2/device-handles.ts). */
import { Type } from '@sinclair/typebox'
import {
  guarded,
  NullableString,
  NullableTimestamp,
  stringEnum,
  Uuid,
  UuidParams,
  type RouteDoc,
} from '../../schemas/common.js'

export const HANDLE_STATES = ['free', 'in_use', 'cleaning', 'clean_failed', 'reconfiguring']

export const AttachHandleView = Type.Object({
  uuid: Uuid,
  deployable_id: Type.Integer({ description: "The deployable's id (as /v2/attributes filters)" }),
  deployable_uuid: Uuid,
  deployable_name: Type.String(),
  attach_type: Type.String({ description: 'PCI | MDEV | TEST_PCI' }),
  attach_info: Type.Record(Type.String(), Type.Unknown(), {
    description: "The unit's address: a PCI address (domain, bus, device, function), an mdev's",
  }),
  in_use: Type.Boolean({ description: 'Held by a request, cleaning or reconfiguring' }),
  state: stringEnum(HANDLE_STATES, {
    description:
      'free; in_use (held by a request); cleaning (released, its clean not answered yet); ' +
      'clean_failed (fenced until an operator acts, docs/cleaning.md); reconfiguring (a program ' +
      'or configure holds it)',
  }),
  clean_state: NullableString,
  clean_since: NullableTimestamp,
  reconfig_kind: NullableString,
  arq_uuid: NullableString,
  arq_state: NullableString,
  instance_uuid: NullableString,
  project_id: NullableString,
})

export const listDeviceHandles: RouteDoc = {
  summary: "A device's attach handles with their state (2.10)",
  description:
    'Every unit of the device, by deployable: its address, whether it is free, in use, cleaning ' +
    'or fenced, and the accelerator request (and instance) holding it. Read-only. Below 2.10 the ' +
    'route answers 404 naming the microversion it needs.',
  tags: ['devices'],
  params: UuidParams,
  response: {
    200: Type.Object({ attach_handles: Type.Array(AttachHandleView) }),
    ...guarded(404, 406),
  },
}
