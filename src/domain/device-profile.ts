/** Device profiles: "what a VM may ask for", as groups of `resources:`, `trait:` and `accel:` keys. */
import { isUuidLike } from './ids.js'
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

const NAME_RE = /^[a-zA-Z0-9-_]+$/
/** Placement's rule for custom resource classes and traits. */
const CUSTOM_RE = /^CUSTOM_[A-Z0-9_]+$/
const KNOWN_FIELDS = new Set(['name', 'groups', 'uuid', 'description'])

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v)

const describe = (v: unknown): string =>
  v === undefined ? 'no body' : v === null ? 'null' : Array.isArray(v) ? 'a list' : `a ${typeof v}`

/**
 * Validates a create request: a JSON list with exactly one `{name, groups, uuid?, description?}`.
 * Every failure is an InvalidInputError whose message and `details.field` name the field at fault.
 */
export function parseDeviceProfileCreate(body: unknown): NewDeviceProfile {
  if (!Array.isArray(body)) {
    throw invalidField(
      'body',
      `expected a JSON list with exactly one device profile, got ${describe(body)}`,
    )
  }
  if (body.length !== 1) {
    throw invalidField(
      'body',
      `expected a JSON list with exactly one device profile, got ${body.length} elements`,
    )
  }
  const item: unknown = body[0]
  if (!isPlainObject(item))
    throw invalidField('body[0]', `expected a JSON object, got ${describe(item)}`)
  for (const key of Object.keys(item)) {
    if (!KNOWN_FIELDS.has(key))
      throw invalidField(key, 'unknown field (allowed: name, groups, uuid, description)')
  }
  const out: NewDeviceProfile = {
    name: validateDeviceProfileName(item.name),
    description: validateDescription(item.description),
    groups: validateDeviceProfileGroups(item.groups),
  }
  if (item.uuid !== undefined && item.uuid !== null) {
    if (typeof item.uuid !== 'string' || !isUuidLike(item.uuid)) {
      throw invalidField('uuid', 'expected a UUID such as 3fa85f64-5717-4562-b3fc-2c963f66afa6')
    }
    out.uuid = item.uuid.toLowerCase()
  }
  return out
}

/** A device profile name: 1 to 255 characters of `[a-zA-Z0-9-_]`. */
export function validateDeviceProfileName(name: unknown, field = 'name'): string {
  if (name === undefined) throw invalidField(field, 'required')
  if (typeof name !== 'string')
    throw invalidField(field, `expected a string, got ${describe(name)}`)
  if (name.length === 0) throw invalidField(field, 'must not be empty')
  if (name.length > DEVICE_PROFILE_TEXT_MAX) {
    throw invalidField(
      field,
      `must be at most ${DEVICE_PROFILE_TEXT_MAX} characters, got ${name.length}`,
    )
  }
  if (!NAME_RE.test(name))
    throw invalidField(field, 'may contain only letters, digits, "-" and "_"')
  return name
}

function validateDescription(description: unknown): string | null {
  if (description === undefined || description === null) return null
  if (typeof description !== 'string')
    throw invalidField('description', `expected a string, got ${describe(description)}`)
  if (description.length > DEVICE_PROFILE_TEXT_MAX) {
    throw invalidField(
      'description',
      `must be at most ${DEVICE_PROFILE_TEXT_MAX} characters, got ${description.length}`,
    )
  }
  return description
}

/**
 * Validates and normalises the groups of a profile: a non-empty list of non-empty maps whose keys
 * are `resources:<RC>` (positive integer amount), `trait:CUSTOM_*` (`required` | `forbidden`) or one
 * of {@link ACCEL_KEYS}. JSON numbers become strings (clients may send `1` for `"1"`); amounts are
 * written without padding and trait names without surrounding spaces, so Nova reads clean keys.
 */
export function validateDeviceProfileGroups(
  groups: unknown,
  field = 'groups',
): Record<string, string>[] {
  if (groups === undefined) throw invalidField(field, 'required')
  if (!Array.isArray(groups))
    throw invalidField(field, `expected a list of groups, got ${describe(groups)}`)
  if (groups.length === 0) throw invalidField(field, 'must contain at least one group')
  return groups.map((group: unknown, i) => validateGroup(group, `${field}[${i}]`))
}

function validateGroup(group: unknown, field: string): Record<string, string> {
  if (!isPlainObject(group))
    throw invalidField(field, `expected a JSON object of string values, got ${describe(group)}`)
  const keys = Object.keys(group)
  if (keys.length === 0) throw invalidField(field, 'must contain at least one key')
  const out: Record<string, string> = {}
  for (const key of keys) {
    const where = `${field}[${JSON.stringify(key)}]`
    const [normKey, value] = validateEntry(key, group[key], where)
    if (Object.hasOwn(out, normKey))
      throw invalidField(where, `duplicates the key ${JSON.stringify(normKey)}`)
    out[normKey] = value
  }
  return out
}

function validateEntry(key: string, raw: unknown, where: string): [string, string] {
  let value: string
  if (typeof raw === 'string') value = raw
  else if (typeof raw === 'number' && Number.isFinite(raw)) value = String(raw)
  else throw invalidField(where, `expected a string value, got ${describe(raw)}`)
  if (key.length > DEVICE_PROFILE_TEXT_MAX) {
    throw invalidField(where, `keys must be at most ${DEVICE_PROFILE_TEXT_MAX} characters`)
  }

  if (key.startsWith('resources:')) {
    const rc = key.slice('resources:'.length)
    if (!STANDARD_RESOURCE_CLASSES.includes(rc) && !CUSTOM_RE.test(rc)) {
      throw invalidField(
        where,
        `unknown resource class ${JSON.stringify(rc)}: expected one of ${STANDARD_RESOURCE_CLASSES.join(', ')} or CUSTOM_ followed by A-Z, 0-9 and _`,
      )
    }
    const trimmed = value.trim()
    const amount = /^[0-9]+$/.test(trimmed) ? Number(trimmed) : NaN
    if (!Number.isSafeInteger(amount) || amount < 1 || amount > MAX_RESOURCE_AMOUNT) {
      throw invalidField(
        where,
        `the amount must be a positive integer (at most ${MAX_RESOURCE_AMOUNT}), got ${JSON.stringify(value)}`,
      )
    }
    return [key, String(amount)]
  }

  if (key.startsWith('trait:')) {
    const trait = key.slice('trait:'.length).trim()
    if (!CUSTOM_RE.test(trait)) {
      throw invalidField(where, 'trait names must start with CUSTOM_ followed by A-Z, 0-9 and _')
    }
    if (value !== 'required' && value !== 'forbidden') {
      throw invalidField(
        where,
        `the value must be "required" or "forbidden", got ${JSON.stringify(value)}`,
      )
    }
    return [`trait:${trait}`, value]
  }

  if (key.startsWith('accel:')) {
    if (!ACCEL_KEYS.includes(key))
      throw invalidField(where, `unknown accel key: expected one of ${ACCEL_KEYS.join(', ')}`)
    if (value.length === 0 || value.length > DEVICE_PROFILE_TEXT_MAX) {
      throw invalidField(where, `the value must be 1 to ${DEVICE_PROFILE_TEXT_MAX} characters`)
    }
    return [key, value]
  }

  throw invalidField(where, 'keys must start with "resources:", "trait:" or "accel:"')
}
