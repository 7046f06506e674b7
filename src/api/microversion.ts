/**
 * Microversions of the v2 API (`OpenStack-API-Version: accelerator X.Y`). The major is always 2;
 * the request carries the minor. 2.1: ARQ bind may set project_id; 2.2: device profiles by name;
 * 2.3: device `status`; 2.4: device `lifecycle` and `lifecycle_reason`, and `POST /devices/{uuid}/ready`;
 * 2.5: device `health`, `health_reason` and `health_updated_at`, and `GET /devices?health=`;
 * 2.6: `POST /device_profiles/{name_or_uuid}/explain`.
 * 2.7: `GET /quota` (docs/quota.md).
 * 2.8: `GET /custody`, `GET /custody/{uuid}` (docs/custody.md; issue 18 asked for 2.7, taken by quota),
 *      `POST /devices/{uuid}/clean` (docs/cleaning.md).
 * 2.9: device `device_state`, OpenStack Cyborg 17.0.0's vocabulary (docs/compat-2026-2.md).
 * 2.10: what the dashboard reads (issue 32, docs/dashboard.md): `GET /events` and its stream, and a
 *       device's attach handles; an ARQ's `state_reason` (why it failed); `GET /devices/summary`
 *       (the Fleet page's counts).
 */
export const MIN_MINOR = 0
export const MAX_MINOR = 10
export const SERVICE_TYPE = 'accelerator'
export const MIN_VERSION = `2.${MIN_MINOR}`
export const MAX_VERSION = `2.${MAX_MINOR}`

/** Header names as sent (lower case, as node reports incoming ones). */
export const VERSION_HEADER = 'openstack-api-version'

/**
 * `bare`: the version came without the service type (`OpenStack-API-Version: 2.3`), which
 * OpenStack Cyborg 17.0.0 still accepts with a deprecation warning in its log (as we do).
 */
export type Negotiated =
  { minor: number; bare?: true; error?: undefined } | { minor?: undefined; error: string }

const RANGE = `the supported range is ${MIN_VERSION} to ${MAX_VERSION}`
const VALUE_RE = /^(\d{1,4})\.(\d{1,4})$/

/**
 * Parses the request header. Accepted: `accelerator 2.3`, `accelerator latest`, a bare `2.3` or
 * `latest` (deprecated: `bare`), or a comma-separated list naming several services (others are
 * ignored; `accelerator X` wins over a bare value). No header, or a header naming only other
 * services, means 2.0. Only `OpenStack-API-Version` is read, as upstream: no legacy header.
 */
export function negotiateMicroversion(header: string | string[] | undefined): Negotiated {
  if (header === undefined) return { minor: MIN_MINOR }
  const raw = Array.isArray(header) ? header.join(',') : header
  let value: string | undefined
  let bare = false
  for (const part of raw.split(',')) {
    const words = part.trim().split(/\s+/)
    if (words.length === 2 && words[0]!.toLowerCase() === SERVICE_TYPE) {
      value = words[1]
      bare = false
    } else if (words.length === 1 && words[0] !== '' && value === undefined) {
      value = words[0]
      bare = true
    }
  }
  if (value === undefined) return { minor: MIN_MINOR }
  const accepted = (minor: number): Negotiated => (bare ? { minor, bare: true } : { minor })
  if (value.toLowerCase() === 'latest') return accepted(MAX_MINOR)
  const m = VALUE_RE.exec(value)
  if (!m) {
    return {
      error: `Invalid OpenStack-API-Version header ${JSON.stringify(raw)}: expected "accelerator X.Y" or "accelerator latest"; ${RANGE}.`,
    }
  }
  const major = Number(m[1])
  const minor = Number(m[2])
  if (major !== 2 || minor < MIN_MINOR || minor > MAX_MINOR) {
    return { error: `Version ${major}.${minor} was requested but ${RANGE}.` }
  }
  return accepted(minor)
}

/** The response headers for each minor, built once: min, max, effective and Vary. */
export const VERSION_RESPONSE_HEADERS: readonly Readonly<Record<string, string>>[] = Array.from(
  { length: MAX_MINOR + 1 },
  (_, minor) => ({
    'openstack-api-minimum-version': MIN_VERSION,
    'openstack-api-maximum-version': MAX_VERSION,
    'openstack-api-version': `${SERVICE_TYPE} 2.${minor}`,
    vary: 'OpenStack-API-Version',
  }),
)
