/**
 * The fake driver's device telemetry, for tests and demos: the values its one device reports are
 * driver options, `sample_<value>` for a named value and `sample_counter_<name>` for a counter:
 *
 * ```
 * cyborg update-driver fake --set sample_utilization_ratio=0.42 \
 *   --set sample_temperature_celsius=51 --set sample_counter_jobs=7
 * ```
 *
 * No `sample_*` option: the fake device reports no telemetry.
 */
import { InvalidInputError } from '../../domain/errors.js'
import {
  DEVICE_VALUE_NAMES,
  cleanDeviceValues,
  type DeviceValueName,
  type DeviceValues,
} from '../../domain/device-telemetry.js'

const PREFIX = 'sample_'
const COUNTER = 'sample_counter_'

/**
 * The values the fake device reports, from the driver's options; undefined when none is set.
 * @throws InvalidInputError for a `sample_*` option that is not a known value or not a number
 */
export function fakeSampleValues(
  options: Readonly<Record<string, string>>,
): DeviceValues | undefined {
  const values: Record<string, unknown> = {}
  const counters: Record<string, number> = {}
  for (const [key, text] of Object.entries(options)) {
    if (!key.startsWith(PREFIX)) continue
    const number = text.trim() === '' ? Number.NaN : Number(text)
    if (!Number.isFinite(number))
      throw new InvalidInputError(`Invalid input for field '${key}': must be a number`, {
        details: { field: key },
      })
    if (key.startsWith(COUNTER)) counters[key.slice(COUNTER.length)] = number
    else if ((DEVICE_VALUE_NAMES as readonly string[]).includes(key.slice(PREFIX.length)))
      values[key.slice(PREFIX.length) as DeviceValueName] = number
    else
      throw new InvalidInputError(
        `Invalid input for field '${key}': must be one of: ${DEVICE_VALUE_NAMES.map((n) => PREFIX + n).join(', ')}, or ${COUNTER}<name>`,
        { details: { field: key } },
      )
  }
  if (Object.keys(counters).length > 0) values.counters = counters
  return cleanDeviceValues(values)
}
