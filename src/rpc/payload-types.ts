/**
 * The building blocks of the RPC payload schemas (conductor-payloads.ts), each carrying the words
 * of its failure for payload-check.ts: "must be a UUID", "must be one of a, b", …
 */
import { Type, type TSchema } from '@sinclair/typebox'
import { FIELD, PROBLEM } from './payload-check.js'

/** `{ [FIELD]: field }` when the field has a wire name of its own. */
const named = (field: string | undefined) => (field === undefined ? {} : { [FIELD]: field })

/** Any case, like isUuidLike (src/domain/ids.ts). */
export const UUID_ANY_CASE =
  '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'

export interface TextOptions {
  /** @default 255 */
  max?: number
  /** Allow the empty string. @default false */
  allowEmpty?: boolean
  /** The field's name in messages, when not the property's. */
  field?: string
}

/** A string of 1..max characters (0..max with `allowEmpty`). */
export const Text = ({ max = 255, allowEmpty = false, field }: TextOptions = {}) =>
  Type.String({ ...(allowEmpty ? {} : { minLength: 1 }), maxLength: max, ...named(field) })

/** An 8-4-4-4-12 hex uuid, any case. */
export const Uuid = (field?: string) =>
  Type.String({ pattern: UUID_ANY_CASE, [PROBLEM]: 'must be a UUID', ...named(field) })

/** A safe integer ≥ 1. */
export const PositiveInt = () =>
  Type.Integer({
    minimum: 1,
    maximum: Number.MAX_SAFE_INTEGER,
    [PROBLEM]: 'must be a positive integer',
  })

/** A safe integer ≥ 0. */
export const NonNegativeInt = () =>
  Type.Integer({
    minimum: 0,
    maximum: Number.MAX_SAFE_INTEGER,
    [PROBLEM]: 'must be a non-negative integer',
  })

/** One of `values` (a const object's values, such as DeviceType's). */
export const OneOf = <T extends string>(values: readonly T[]) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    { [PROBLEM]: `must be one of ${values.join(', ')}` },
  )

/** Any key: TypeBox's own key pattern (`^(.*)$`) misses those with a line break. */
const ANY_KEY = Type.String({ pattern: '^[\\s\\S]*$' })

/** A flat object whose values are all strings (a request group, an attach handle's info). */
export const StringMap = () => Type.Record(ANY_KEY, Type.String())

/** A JSON object of anything, or null (a device's board info). */
export const ObjectOrNull = () =>
  Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
    [PROBLEM]: 'must be an object or null',
  })

/** `schema` or null; anything else fails as `schema` does. */
export const Nullable = <T extends TSchema>(schema: T, field?: string) =>
  Type.Union([schema, Type.Null()], named(field))
