/**
 * The v1 API's write inputs (api-v1-and-cli.md): the attach body of `PUT /v1/accelerators/{uuid}`,
 * the spec of `PUT /v1/accelerators/{uuid}/acc_specs`, and the spec's ETag. Pure: no I/O.
 */
import { createHash } from 'node:crypto'
import { isUuidLike } from './ids.js'
import { invalidField, NotFoundError } from './errors.js'
import { canonicalJson } from './inventory/inventory.js'

/** Where a v1 attach goes: to a VM (the Nova path) or to a host (the agent prepares the device). */
export type AttachTarget = { instanceUuid: string } | { hostname: string }

/** The seed's accelerator spec: `{remote, num, device_type, acc_capability}`. */
export interface AccSpecs {
  remote?: 0 | 1
  num?: number
  device_type?: string
  acc_capability?: Record<string, unknown>
}

/** The largest spec stored, as canonical JSON. */
export const MAX_ACC_SPECS_BYTES = 65_536

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

function rejectUnknown(
  body: Record<string, unknown>,
  allowed: readonly string[],
  where: string,
): void {
  const extra = Object.keys(body).filter((k) => !allowed.includes(k))
  if (extra.length > 0)
    throw invalidField(
      where === '' ? extra[0]! : `${where}.${extra[0]!}`,
      `unknown field; allowed: ${allowed.join(', ')}`,
    )
}

/**
 * The attach body: exactly one of `instance_uuid` and `hostname`; `name` and `uuid`, as in the
 * seed's example, must match the accelerator when present.
 */
export function parseAttachBody(
  body: unknown,
  accelerator: { uuid: string; name: string },
): AttachTarget {
  if (!isObject(body))
    throw invalidField('body', 'expected a JSON object with instance_uuid or hostname')
  rejectUnknown(body, ['instance_uuid', 'hostname', 'name', 'uuid'], '')
  if (
    body.uuid !== undefined &&
    (typeof body.uuid !== 'string' || body.uuid.toLowerCase() !== accelerator.uuid)
  ) {
    throw invalidField('uuid', `does not match the accelerator in the path (${accelerator.uuid})`)
  }
  if (body.name !== undefined && body.name !== accelerator.name)
    throw invalidField('name', `does not match the accelerator's name (${accelerator.name})`)
  const { instance_uuid: instance, hostname } = body
  if ((instance === undefined) === (hostname === undefined))
    throw invalidField(
      'instance_uuid',
      'give exactly one of instance_uuid (attach to a VM) and hostname (attach to a host)',
    )
  if (instance !== undefined) {
    if (typeof instance !== 'string' || !isUuidLike(instance))
      throw invalidField('instance_uuid', 'expected a UUID')
    return { instanceUuid: instance.toLowerCase() }
  }
  if (typeof hostname !== 'string' || hostname.trim() === '' || hostname.length > 255)
    throw invalidField('hostname', 'expected a host name of 1-255 characters')
  return { hostname }
}

/** `{"acc_specs": {…}}`, checked field by field. */
export function parseAccSpecsBody(body: unknown): AccSpecs {
  if (!isObject(body)) throw invalidField('body', 'expected a JSON object {"acc_specs": {...}}')
  rejectUnknown(body, ['acc_specs'], '')
  const specs = body.acc_specs
  if (!isObject(specs))
    throw invalidField(
      'acc_specs',
      'expected an object with remote, num, device_type and acc_capability',
    )
  rejectUnknown(specs, ['remote', 'num', 'device_type', 'acc_capability'], 'acc_specs')
  const out: AccSpecs = {}
  if (specs.remote !== undefined) {
    if (specs.remote !== 0 && specs.remote !== 1)
      throw invalidField('acc_specs.remote', 'expected 0 or 1')
    out.remote = specs.remote
  }
  if (specs.num !== undefined) {
    if (!Number.isSafeInteger(specs.num) || (specs.num as number) < 0)
      throw invalidField('acc_specs.num', 'expected an integer of 0 or more')
    out.num = specs.num as number
  }
  if (specs.device_type !== undefined) {
    if (
      typeof specs.device_type !== 'string' ||
      specs.device_type === '' ||
      specs.device_type.length > 255
    ) {
      throw invalidField('acc_specs.device_type', 'expected a string of 1-255 characters')
    }
    out.device_type = specs.device_type
  }
  if (specs.acc_capability !== undefined) {
    if (!isObject(specs.acc_capability))
      throw invalidField('acc_specs.acc_capability', 'expected an object')
    out.acc_capability = specs.acc_capability
  }
  if (Buffer.byteLength(canonicalJson(out)) > MAX_ACC_SPECS_BYTES)
    throw invalidField('acc_specs', `larger than ${MAX_ACC_SPECS_BYTES} bytes`)
  return out
}

/**
 * The ETag of an accelerator's spec: it changes with every spec written through v1 (`stored` is
 * the stored canonical JSON, null while the spec is derived from the inventory).
 */
export function accSpecsEtag(stored: string | null): string {
  return `"${createHash('sha256')
    .update(stored ?? '')
    .digest('hex')
    .slice(0, 20)}"`
}

/** Does an `If-Match` header value (`*`, or a comma-separated list of ETags, weak or strong) match `etag`? */
export function ifMatchAccepts(header: string, etag: string): boolean {
  return header
    .split(',')
    .map((t) => t.trim().replace(/^W\//, ''))
    .some((t) => t === '*' || t === etag)
}

/**
 * A detach by instance that finds nothing of the caller's attached to it (none at all, or only
 * another project's: the two are told apart by nobody but an admin).
 */
export function attachmentNotFound(uuid: string, instanceUuid: string): NotFoundError {
  return new NotFoundError(`accelerator ${uuid} has no attachment to instance ${instanceUuid}`, {
    code: 'ATTACHMENT_NOT_FOUND',
    details: { field: 'instance_uuid', uuid, instanceUuid },
  })
}
