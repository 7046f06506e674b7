/**
 * Input checks of the AgentRpc 1.2 methods (driver-admin.ts). They run before anything else, so an
 * RPC can never hand a driver or a vendor tool something malformed; every failure is an
 * InvalidInputError whose `details.field` names the field.
 */
import path from 'node:path'
import { InvalidInputError } from '../domain/errors.js'
import { parsePciAddress } from './device-ops.js'
import { isCanonicalUuid } from '../domain/ids.js'

const field = (req: unknown, name: string): unknown =>
  req !== null && typeof req === 'object' ? (req as Record<string, unknown>)[name] : undefined

const invalid = (name: string, message: string, code = 'INVALID_INPUT'): never => {
  throw new InvalidInputError(`${name} ${message}`, { code, details: { field: name } })
}

/**
 * `controlPath` ({domain, bus, device, function}) as `dddd:bb:dd.f`, lower case; a remote
 * accelerator's ({uuid}) as `remote:<uuid>` (controlPathAddress of src/domain/inventory/inventory.ts).
 */
export function parseControlPath(req: unknown): string {
  const cp = field(req, 'controlPath')
  const remote = field(cp, 'uuid')
  if (remote !== undefined) {
    if (typeof remote !== 'string' || !isCanonicalUuid(remote))
      invalid('controlPath.uuid', 'must be a lower-case UUID')
    return `remote:${remote as string}`
  }
  const parts = ['domain', 'bus', 'device', 'function'].map((k) => field(cp, k))
  if (!parts.every((p) => typeof p === 'string')) {
    invalid(
      'controlPath',
      'must be a PCI address {domain, bus, device, function} of strings',
      'PCI_ADDRESS_INVALID',
    )
  }
  const [domain, bus, device, fn] = parts as string[]
  return parsePciAddress(`${domain}:${bus}:${device}.${fn}`, 'controlPath')
}

/** `address`, a PCI function like `0000:3b:00.0` (the same rule as prepare/release). */
export const parseProgramAddress = (req: unknown): string => parsePciAddress(field(req, 'address'))

/**
 * `imagePath`: an absolute path on the agent's host, at most 4096 characters, without control
 * characters or `.`/`..` segments (the vendor tool gets it as one argument, never through a shell).
 */
export function parseImagePath(req: unknown): string {
  const value = field(req, 'imagePath')
  const ok =
    typeof value === 'string' &&
    value.length <= 4096 &&
    path.posix.isAbsolute(value) &&
    ![...value].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f) &&
    !value.split('/').some((seg) => seg === '.' || seg === '..')
  if (!ok)
    invalid(
      'imagePath',
      `must be an absolute path like /var/lib/cyborg/images/x.gbs, not ${JSON.stringify(value)}`,
      'IMAGE_PATH_INVALID',
    )
  return value as string
}

/** `driver`: a driver name (or one of Cyborg's aliases). */
export function parseAdminDriver(req: unknown): string {
  const value = field(req, 'driver')
  if (typeof value !== 'string' || value.length === 0 || value.length > 64)
    invalid('driver', 'must be a driver name')
  return value as string
}

/** `enabled`: a boolean. */
export function parseEnabled(req: unknown): boolean {
  const value = field(req, 'enabled')
  if (typeof value !== 'boolean') invalid('enabled', 'must be true or false')
  return value as boolean
}

/** `options`: a flat object of strings (at most 64 keys). */
export function parseOptions(req: unknown): Record<string, string> {
  const value = field(req, 'options')
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    invalid('options', 'must be an object of strings')
  const entries = Object.entries(value as object)
  if (entries.length > 64) invalid('options', 'may hold at most 64 options')
  for (const [k, v] of entries) {
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(k) || k === '__proto__')
      invalid(`options.${k}`, 'is not an option name')
    if (typeof v !== 'string' || v.length > 65536)
      invalid(`options.${k}`, 'must be a string of at most 65536 characters')
  }
  return Object.fromEntries(entries) as Record<string, string>
}
