/** The documentation of `/v2/device_profiles` and its explain route (src/api/v2/device-profiles.ts, explain.ts). */
import { Type } from '@sinclair/typebox'
import { DEVICE_PROFILE_SORT_KEYS } from '../../../db/reads/device-profile-reads.js'
import { EXPLAIN_RULES } from '../../../domain/explain.js'
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
  stringEnum,
  Timestamp,
  Uuid,
  type RouteDoc,
} from '../../schemas/common.js'

const tags = ['device profiles']

const Group = Type.Record(Type.String({ maxLength: 255 }), Type.String({ maxLength: 255 }), {
  minProperties: 1,
  description:
    '`resources:<RC>` = count, `trait:CUSTOM_<X>` = required | forbidden, `accel:<key>` = value',
})

export const DeviceProfile = Type.Object({
  uuid: Uuid,
  name: Type.String(),
  description: NullableString,
  groups: Type.Array(Group),
  created_at: Timestamp,
  updated_at: NullableTimestamp,
  links: Links,
})

const ValueParams = Type.Object({
  value: Type.String({ description: 'A uuid, or a name (by name from 2.2 on for GET)' }),
})

export const ListProfilesQuery = Type.Object({
  name: Type.Optional(QueryString({ description: 'Comma-separated names' })),
  ...pagingQuery(DEVICE_PROFILE_SORT_KEYS),
})

export const DeleteProfilesQuery = Type.Object({
  value: QueryString(
    { pattern: '[^,]', description: 'Comma-separated uuids or names' },
    'name at least one device profile by uuid or name',
  ),
})

export const listDeviceProfiles: RouteDoc = {
  summary: 'List device profiles',
  description:
    'Every profile in id order, or a page of them: `limit`, `marker` (the uuid of the last ' +
    'profile of the previous page), `sort_key` (id, name, created_at) and `sort_dir`, as the ' +
    'other lists; `name` keeps only the profiles named. An unknown marker is a 400 naming it.',
  tags,
  querystring: ListProfilesQuery,
  response: {
    200: Type.Object({ device_profiles: Type.Array(DeviceProfile) }),
    ...guarded(400, 406),
  },
}

export const createDeviceProfile: RouteDoc = {
  summary: 'Create a device profile',
  description:
    'The body is a list of exactly one profile. In a group, a JSON number is taken as its text; amounts and trait names are stored trimmed.',
  tags,
  response: { 201: DeviceProfile, ...guardedWrite(406, 409) },
}

export const deleteDeviceProfiles: RouteDoc = {
  summary: 'Delete the device profiles named in ?value= (all or none)',
  tags,
  querystring: DeleteProfilesQuery,
  response: { 204: NoBody('Deleted'), ...guarded(400, 404, 406, 409) },
}

export const getDeviceProfile: RouteDoc = {
  summary: 'Show a device profile by uuid, or by name from 2.2',
  tags,
  params: ValueParams,
  response: { 200: Type.Object({ device_profile: DeviceProfile }), ...guarded(404, 406) },
}

export const deleteDeviceProfile: RouteDoc = {
  summary: 'Delete a device profile by uuid or name',
  tags,
  params: ValueParams,
  response: { 204: NoBody('Deleted'), ...guarded(404, 406, 409) },
}

const Candidate = Type.Object({
  deployable_uuid: Uuid,
  deployable_name: Type.String(),
  hostname: Type.String(),
  device_uuid: Uuid,
  rule: stringEnum(EXPLAIN_RULES, { description: 'The first rule that rules it out, or `fits`' }),
  reason: Type.String(),
  free_units: Type.Integer(),
  placement: nullable(
    stringEnum(['offered', 'not_offered'], {
      description:
        "Whether Placement's GET /allocation_candidates for the group allocates from the " +
        "deployable's provider; null without Placement, for a deployable with no provider, or a " +
        'group with no resource class',
    }),
  ),
  placement_reason: Type.Union([Type.String(), Type.Null()], {
    description:
      'Where Cyborg and Placement disagree (fits but not offered, or offered but ruled out): ' +
      'the difference, named in parentheses (inventory, inventory reserved, usage, traits, ' +
      "provider, limit), or that the rule is Cyborg's own (expected). Null otherwise, or when " +
      'not diagnosed (see placement.note)',
  }),
})

const PlacementSummary = nullable(
  Type.Object(
    {
      configured: Type.Boolean({ description: 'Whether the conductor has [placement]' }),
      error: Type.Optional(
        Type.String({ description: 'Placement (or the conductor) failed: what it said' }),
      ),
      note: Type.Optional(
        Type.String({
          description: 'Disagreeing providers left undiagnosed (at most 20 per request)',
        }),
      ),
    },
    {
      description:
        'The comparison with Placement (read by the conductor, RPC 1.6 placementExplain); null when the conductor is older',
    },
  ),
)

const OptionalText = Type.Optional(
  Type.Unsafe<string | null>({ type: ['string', 'null'], minLength: 1, maxLength: 255 }),
)

/** The explain body (validating: `schema.body` of the route); an absent body counts as `{}`. */
export const ExplainBody = Type.Object(
  { hostname: OptionalText, project_id: OptionalText },
  { additionalProperties: false },
)

export const explainDeviceProfile: RouteDoc = {
  summary: 'Explain where each group of a profile could bind, and why not elsewhere (2.6)',
  description:
    "The body is optional. The quota rule judges project_id's limits, or the caller's " +
    "project's (only an admin may name another; docs/quota.md). With [placement] on the " +
    'conductor, each candidate says whether Placement offers it and why not where the two ' +
    'disagree (docs/explain.md). Below 2.6 the route answers 404 naming the microversion it ' +
    'needs.',
  tags,
  params: ValueParams,
  response: {
    200: Type.Object({
      device_profile: Type.Object({ uuid: Uuid, name: Type.String() }),
      hostname: NullableString,
      project_id: NullableString,
      placement: PlacementSummary,
      groups: Type.Array(
        Type.Object({
          group_id: Type.Integer(),
          resource_class: NullableString,
          required_traits: Type.Array(Type.String()),
          forbidden_traits: Type.Array(Type.String()),
          fits: Type.Integer(),
          candidates: Type.Array(Candidate),
        }),
      ),
    }),
    ...guardedWrite(404, 406),
  },
}
