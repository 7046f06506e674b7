/** Device profiles: "what a VM may ask for", as groups of `resources:`, `trait:` and `accel:` keys. */
import { invalidField } from './errors.js'

export interface DeviceProfile {
  id: number
  uuid: string
  name: string
  description: string | null
  /** Each group is a flat string → string map, as Nova reads it. */
  groups: Record<string, string>[]
  createdAt: string
  updatedAt: string | null
}

/** A validated request to create a device profile (`POST /v2/device_profiles`). */
export interface NewDeviceProfile {
  name: string
  description: string | null
  groups: Record<string, string>[]
  /** A client-chosen uuid (lower-cased); the conductor picks one when absent. */
  uuid?: string
}

/** Resource classes a group may request besides any `CUSTOM_*` class (OpenStack Cyborg's list). */
export const STANDARD_RESOURCE_CLASSES: readonly string[] = [
  'FPGA',
  'GPU',
  'VGPU',
  'PGPU',
  'CUSTOM_QAT',
  'CUSTOM_NIC',
  'CUSTOM_SSD',
]

/** The only `accel:` keys a group may carry. */
export const ACCEL_KEYS: readonly string[] = ['accel:bitstream_id', 'accel:function_id']

/** Longest name, description, group key and `accel:` value accepted. */
export const DEVICE_PROFILE_TEXT_MAX = 255

/** Largest resource amount: Placement's inventory fields are 32-bit signed integers. */
export const MAX_RESOURCE_AMOUNT = 2_147_483_647

/** Placement's rule for custom resource classes and traits, unanchored: build patterns from it. */
export const CUSTOM_NAME_PATTERN = 'CUSTOM_[A-Z0-9_]+'

/**
 * A create request as its schema lets it through (src/api/v2/schemas/device-profile-body.ts):
 * name, description, uuid and every group key and value already checked.
 */
export interface DeviceProfileInput {
  name: string
  description?: string | null
  uuid?: string | null
  groups: Record<string, string | number>[]
}

/**
 * What the schema cannot say: JSON numbers become strings (clients may send `1` for `"1"`),
 * amounts are written without spaces or padding and trait names without surrounding spaces, so
 * Nova reads clean keys; the uuid is lower-cased. Two keys that are the same once normalised
 * (`trait:CUSTOM_A`, `trait: CUSTOM_A`) are an InvalidInputError naming the second.
 */
export function normalizeDeviceProfile(input: DeviceProfileInput): NewDeviceProfile {
  const out: NewDeviceProfile = {
    name: input.name,
    description: input.description ?? null,
    groups: input.groups.map((group, i) => normalizeGroup(group, `groups[${i}]`)),
  }
  if (input.uuid !== undefined && input.uuid !== null) out.uuid = input.uuid.toLowerCase()
  return out
}

/**
 * A new profile's every group asks for something: at least one `resources:` key. OpenStack
 * Cyborg 17.0.0 refuses a group of only `trait:`/`accel:` keys with a 400 (bug 2168261): such a
 * profile stored fine, then every bind of it failed. Profiles stored earlier (an import of an
 * older Cyborg's database) are not checked: they stay readable and deletable.
 * @throws InvalidInputError naming `groups[<i>]`.
 */
export function requireResourceKeys(groups: readonly Record<string, unknown>[]): void {
  groups.forEach((group, i) => {
    if (!Object.keys(group).some((key) => key.startsWith('resources:'))) {
      throw invalidField(
        `groups[${i}]`,
        'a group needs at least one "resources:<RESOURCE_CLASS>" key; ' +
          'trait: and accel: keys alone ask for nothing',
      )
    }
  })
}

function normalizeGroup(
  group: Record<string, string | number>,
  field: string,
): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [key, raw] of Object.entries(group)) {
    const value = String(raw)
    let normKey = key
    let normValue = value
    if (key.startsWith('resources:')) normValue = String(Number(value.trim()))
    else if (key.startsWith('trait:')) normKey = `trait:${key.slice('trait:'.length).trim()}`
    if (Object.hasOwn(out, normKey)) {
      const where = `${field}[${JSON.stringify(key)}]`
      throw invalidField(where, `duplicates the key ${JSON.stringify(normKey)}`)
    }
    out[normKey] = normValue
  }
  return out
}
