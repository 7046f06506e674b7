/**
 * The body of `PATCH /accelerator_requests[/{uuid}]`: an object keyed by ARQ uuid whose values are
 * JSON-Patch lists. A list of `add` ops binds (`/hostname`, `/instance_uuid`, optionally
 * `/device_rp_uuid`, and `/project_id` from 2.1 on); a list of `remove` ops unbinds.
 */
import { Type, type Static } from '@sinclair/typebox'
import { isUuidLike } from '../../domain/ids.js'
import { invalidField } from '../../domain/errors.js'
import type { ArqBindRequest } from '../../rpc/conductor-rpc.js'
import { ApiError } from '../errors.js'

const PatchOp = Type.Object(
  {
    op: Type.String({ enum: ['add', 'remove'] }),
    path: Type.String({ maxLength: 255 }),
    value: Type.Optional(Type.String({ maxLength: 255 })),
  },
  { additionalProperties: false },
)

export const ArqPatchBody = Type.Record(
  Type.String(),
  Type.Array(PatchOp, { minItems: 1, maxItems: 16 }),
  {
    minProperties: 1,
  },
)
export type ArqPatchBody = Static<typeof ArqPatchBody>

export type ArqPatch =
  { kind: 'bind'; bindings: Record<string, ArqBindRequest> } | { kind: 'unbind'; uuids: string[] }

const PATHS = ['/hostname', '/device_rp_uuid', '/instance_uuid', '/project_id'] as const
type PatchPath = (typeof PATHS)[number]

/** Checks one ARQ's op list; returns its kind and, for a bind, the values by path. */
function parseOps(key: string, ops: ArqPatchBody[string], apiMinor: number, isAdmin: boolean) {
  const kinds = new Set(ops.map((o) => o.op))
  if (kinds.size > 1) {
    throw invalidField(
      key,
      'mixes add and remove: a list either binds (all add) or unbinds (all remove)',
    )
  }
  const kind = kinds.has('add') ? 'bind' : 'unbind'
  const values = new Map<PatchPath, string>()
  const seen = new Set<string>()
  ops.forEach(({ path, value }, i) => {
    if (!(PATHS as readonly string[]).includes(path)) {
      throw invalidField(
        `${key}/${i}/path`,
        `unknown path ${JSON.stringify(path)}; allowed: ${PATHS.join(', ')}`,
      )
    }
    if (seen.has(path)) throw invalidField(`${key}/${i}/path`, `${path} is given twice`)
    seen.add(path)
    if (path === '/project_id') {
      if (apiMinor < 1) {
        throw new ApiError(
          406,
          `The path /project_id needs microversion 2.1 or later (this request is at 2.${apiMinor})`,
        )
      }
      if (!isAdmin)
        throw new ApiError(403, 'Only an admin may set /project_id of an accelerator request')
    }
    if (kind === 'unbind') return
    if (value === undefined || value === '')
      throw invalidField(`${key}/${i}/value`, `a non-empty value is required to add ${path}`)
    if ((path === '/instance_uuid' || path === '/device_rp_uuid') && !isUuidLike(value)) {
      throw invalidField(
        `${key}/${i}/value`,
        `${path} must be a UUID, got ${JSON.stringify(value)}`,
      )
    }
    values.set(path as PatchPath, value)
  })
  return { kind, values } as const
}

/**
 * Turns a validated body into one bind or one unbind. `pathUuid` is the uuid of
 * `PATCH /accelerator_requests/{uuid}` (the openstack CLI's form): the body must be about it alone.
 * @throws InvalidInputError naming the field; ApiError 406 (/project_id below 2.1) or 403.
 */
export function parseArqPatch(
  body: ArqPatchBody,
  options: { apiMinor: number; isAdmin: boolean; pathUuid?: string },
): ArqPatch {
  const entries = Object.entries(body)
  if (options.pathUuid !== undefined) {
    const keys = entries.map(([k]) => k.toLowerCase())
    if (keys.length !== 1 || keys[0] !== options.pathUuid) {
      throw invalidField(
        'body',
        `must have exactly one key, the uuid of the path (${options.pathUuid}); got ${JSON.stringify(Object.keys(body))}`,
      )
    }
  }
  const bindings: Record<string, ArqBindRequest> = {}
  const unbinds: string[] = []
  for (const [key, ops] of entries) {
    if (!isUuidLike(key)) throw invalidField(key, 'is not an accelerator request UUID')
    const uuid = key.toLowerCase()
    if (uuid in bindings || unbinds.includes(uuid)) throw invalidField(key, 'is given twice')
    const { kind, values } = parseOps(key, ops, options.apiMinor, options.isAdmin)
    if (kind === 'unbind') {
      unbinds.push(uuid)
      continue
    }
    const hostname = values.get('/hostname')
    const instanceUuid = values.get('/instance_uuid')
    if (hostname === undefined || instanceUuid === undefined) {
      const missing = ['/hostname', '/instance_uuid'].filter((p) => !values.has(p as PatchPath))
      throw invalidField(
        key,
        `Fields absent: binding needs /hostname and /instance_uuid (missing ${missing.join(', ')})`,
      )
    }
    const deviceRpUuid = values.get('/device_rp_uuid')
    const projectId = values.get('/project_id')
    bindings[uuid] = {
      hostname,
      instanceUuid: instanceUuid.toLowerCase(),
      ...(deviceRpUuid === undefined ? {} : { deviceRpUuid: deviceRpUuid.toLowerCase() }),
      ...(projectId === undefined ? {} : { projectId }),
    }
  }
  const binds = Object.keys(bindings).length
  if (binds > 0 && unbinds.length > 0) {
    throw invalidField(
      'body',
      'binds some accelerator requests and unbinds others; send them as two requests',
    )
  }
  return binds > 0 ? { kind: 'bind', bindings } : { kind: 'unbind', uuids: unbinds }
}
