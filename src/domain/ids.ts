/**
 * Identifiers: random UUIDs for new rows and name-based (v5) UUIDs for things that must come out
 * the same every time, such as a deployable's Placement resource provider.
 */
import { createHash, randomUUID } from 'node:crypto'
import { InvalidInputError } from './errors.js'

/** The namespace of every name-based UUID this project derives. Never change it: RP uuids depend on it. */
export const CYBORG_NAMESPACE = '6c3f9a52-0b7e-5d1a-9f44-2f6e1c8b7d30'

/** The 8-4-4-4-12 hex form of a UUID, lower case, unanchored: build other patterns from it. */
export const UUID_PATTERN = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
const UUID_ANY_CASE = new RegExp(`^${UUID_PATTERN}$`, 'i')
const UUID_LOWER = new RegExp(`^${UUID_PATTERN}$`)

/** True for an 8-4-4-4-12 hex uuid (any version, any case): what the APIs accept. */
export function isUuidLike(value: string): boolean {
  return UUID_ANY_CASE.test(value)
}

/** True for a uuid in its canonical, lower-case form: what is stored and what the agent writes to sysfs. */
export function isCanonicalUuid(value: string): boolean {
  return UUID_LOWER.test(value)
}

/**
 * A name-based UUID, version 5 (SHA-1), as RFC 4122 §4.3 (RFC 9562 §5.5) defines it:
 * the same name in the same namespace always gives the same UUID.
 * @throws InvalidInputError when `namespace` is not a UUID.
 */
export function uuidV5(name: string, namespace: string): string {
  if (!isUuidLike(namespace)) {
    throw new InvalidInputError(`namespace is not a UUID: ${namespace}`, {
      details: { field: 'namespace' },
    })
  }
  const hash = createHash('sha1')
    .update(Buffer.from(namespace.replace(/-/g, ''), 'hex'))
    .update(name, 'utf8')
    .digest()
  const bytes = hash.subarray(0, 16)
  bytes[6] = (bytes[6]! & 0x0f) | 0x50 // version 5
  bytes[8] = (bytes[8]! & 0x3f) | 0x80 // RFC 4122 variant
  const hex = bytes.toString('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/**
 * The resource provider UUID of a deployable: deterministic, so the conductor and Placement agree
 * across restarts, and distinct across hosts even when two hosts report the same deployable name.
 */
export function deployableRpUuid(hostname: string, deployableName: string): string {
  // JSON keeps the two parts apart: ('a_b', 'c') and ('a', 'b_c') never share a name.
  return uuidV5(JSON.stringify(['deployable', hostname, deployableName]), CYBORG_NAMESPACE)
}

/** A new random (version 4) UUID. */
export function newUuid(): string {
  return randomUUID()
}
