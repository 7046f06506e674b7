/**
 * The body of `POST /v2/device_profiles`, validating (the route's `schema.body`) and so documented:
 * a list of exactly one `{name, groups, uuid?, description?}`. Failures keep OpenStack Cyborg's
 * wording and field names (`groups[0]["resources:FPGA"]`, src/api/validation-errors.ts). What JSON
 * Schema cannot say is src/domain/device-profile.ts's normalizeDeviceProfile, once this passed:
 * numbers to strings, amounts and trait names trimmed, keys that are the same once trimmed.
 */
import { Type, type Static } from '@sinclair/typebox'
import {
  ACCEL_KEYS,
  CUSTOM_NAME_PATTERN as CUSTOM,
  DEVICE_PROFILE_TEXT_MAX as MAX,
  MAX_RESOURCE_AMOUNT,
  STANDARD_RESOURCE_CLASSES,
} from '../../../domain/device-profile.js'
import { UUID_ANY_CASE_PATTERN } from '../../schemas/common.js'
import { withFieldStyle, withProblem } from '../../validation-errors.js'

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/**
 * The decimal integers 1 to `max` without leading zeros, as alternatives that never overlap (no
 * nested quantifier): fewer digits than `max`, then each digit of `max` lowered in turn.
 */
export function upToPattern(max: number): string {
  const digits = String(max)
  const alternatives = digits.length > 1 ? [`[1-9][0-9]{0,${digits.length - 2}}`] : []
  for (let i = 0; i < digits.length; i++) {
    const low = i === 0 ? 1 : 0
    const d = Number(digits[i])
    if (d <= low) continue
    const range = d - 1 === low ? String(low) : `[${low}-${d - 1}]`
    const rest = digits.length - i - 1
    const tail = rest === 0 ? '' : rest === 1 ? '[0-9]' : `[0-9]{${rest}}`
    alternatives.push(`${digits.slice(0, i)}${range}${tail}`)
  }
  return [...alternatives, digits].join('|')
}

const RC = [
  ...STANDARD_RESOURCE_CLASSES.filter((rc) => !new RegExp(`^${CUSTOM}$`).test(rc)).map(escape),
  CUSTOM,
].join('|')
const ACCEL = ACCEL_KEYS.map(escape).join('|')
const TRAIT = `\\s*${CUSTOM}\\s*$`

/** A key's schema that always fails, with the reason. */
const refuse = (problem: string) => withProblem(Type.Never(), problem)

const Amount = withProblem(
  Type.Unsafe<string | number>({
    anyOf: [
      { type: 'string', pattern: `^\\s*0*(?:${upToPattern(MAX_RESOURCE_AMOUNT)})\\s*$` },
      { type: 'integer', minimum: 1, maximum: MAX_RESOURCE_AMOUNT },
    ],
  }),
  `the amount must be a positive integer (at most ${MAX_RESOURCE_AMOUNT}), got {value}`,
)

const TraitValue = withProblem(
  Type.Unsafe<string>({ type: 'string', enum: ['required', 'forbidden'] }),
  'the value must be "required" or "forbidden", got {value}',
)

const AccelValue = withProblem(
  Type.Unsafe<string | number>({
    anyOf: [{ type: 'string', minLength: 1, maxLength: MAX }, { type: 'number' }],
  }),
  `the value must be 1 to ${MAX} characters, got {kind}`,
)

/** One request group: keys by prefix, each unknown form refused with its own reason. */
const Group = withProblem(
  Type.Unsafe<Record<string, string | number>>({
    type: 'object',
    minProperties: 1,
    propertyNames: withProblem(
      Type.String({ maxLength: MAX }),
      `keys must be at most ${MAX} characters`,
    ),
    patternProperties: {
      [`^resources:(?:${RC})$`]: Amount,
      [`^trait:${TRAIT}`]: TraitValue,
      [`^(?:${ACCEL})$`]: AccelValue,
      [`^resources:(?!(?:${RC})$)`]: refuse(
        `unknown resource class in {key}: expected one of ${STANDARD_RESOURCE_CLASSES.join(', ')} or CUSTOM_ followed by A-Z, 0-9 and _`,
      ),
      [`^trait:(?!${TRAIT})`]: refuse(
        'trait names must start with CUSTOM_ followed by A-Z, 0-9 and _',
      ),
      [`^(?!(?:${ACCEL})$)accel:`]: refuse(
        `unknown accel key: expected one of ${ACCEL_KEYS.join(', ')}`,
      ),
      '^(?!resources:|trait:|accel:)': refuse(
        'keys must start with "resources:", "trait:" or "accel:"',
      ),
    },
    additionalProperties: false,
    description:
      '`resources:<RC>` = a positive count, `trait:CUSTOM_<X>` = required | forbidden, ' +
      '`accel:bitstream_id` or `accel:function_id` = a value; a number is taken as its text',
  }),
  {
    type: 'expected a JSON object of string values, got {kind}',
    minProperties: 'must contain at least one key',
  },
)

const Text = (extra: Record<string, unknown>) =>
  Type.Unsafe<string | null>({ type: ['string', 'null'], ...extra })

const Profile = withProblem(
  Type.Object(
    {
      name: withProblem(
        Type.String({ minLength: 1, maxLength: MAX, pattern: '^[a-zA-Z0-9_-]+$' }),
        {
          type: 'expected a string, got {kind}',
          minLength: 'must not be empty',
          maxLength: `must be at most ${MAX} characters`,
          pattern: 'may contain only letters, digits, "-" and "_"',
        },
      ),
      groups: withProblem(Type.Array(Group, { minItems: 1 }), {
        type: 'expected a list of groups, got {kind}',
        minItems: 'must contain at least one group',
      }),
      uuid: Type.Optional(
        withProblem(
          Text({ pattern: UUID_ANY_CASE_PATTERN, description: 'A uuid (any case), or null' }),
          'expected a UUID such as 3fa85f64-5717-4562-b3fc-2c963f66afa6, got {value}',
        ),
      ),
      description: Type.Optional(
        withProblem(Text({ maxLength: MAX }), {
          type: 'expected a string or null, got {kind}',
          maxLength: `must be at most ${MAX} characters`,
        }),
      ),
    },
    { additionalProperties: false },
  ),
  {
    type: 'expected a JSON object, got {kind}',
    additionalProperties: 'unknown field (allowed: name, groups, uuid, description)',
  },
)

const ONE = 'expected a JSON list with exactly one device profile, got {kind}'

/** The validating body schema of `POST /v2/device_profiles`. */
export const DeviceProfileCreate = withFieldStyle(
  withProblem(
    Type.Array(Profile, {
      minItems: 1,
      maxItems: 1,
      description: 'A list of exactly one profile',
    }),
    { type: ONE, minItems: ONE, maxItems: ONE },
  ),
  { brackets: true, single: true },
)

export type DeviceProfileCreateBody = Static<typeof DeviceProfileCreate>
