/**
 * `/v1/accelerators`, the seed's API (api-v1-and-cli.md): the list (filters `device_type` and
 * `hostname`, with `limit`, `marker`, `sort_key`, `sort_dir` and a `next` link when a page is
 * full) and one accelerator, both views over the one inventory, with the spec's ETag on one; and
 * the writes, all through the conductor: attach (`PUT /{uuid}`), detach (`DELETE /{uuid}`), the
 * spec (`PUT /{uuid}/acc_specs`, If-Match) and the operator lifecycle (`POST /{uuid}/ready`).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ACCELERATOR_SORT_KEYS } from '../../db/reads/v1-accelerators.js'
import {
  getAccelerator,
  hasRequestFor,
  listAccelerators,
  type Accelerator,
} from '../../db/reads/v1-accelerators.js'
import { isUuidLike } from '../../domain/ids.js'
import {
  accSpecsEtag,
  attachmentNotFound,
  parseAccSpecsBody,
  parseAttachBody,
} from '../../domain/v1-accelerator.js'
import { NotFoundError } from '../../domain/errors.js'
import { visibleProject } from '../../domain/request-context.js'
import { markerNotFoundToInvalid, pagingOf } from '../query.js'
import type { QueryOf } from '../schemas/common.js'
import { resource } from '../routing.js'
import type { V1Env } from './env.js'
import * as docs from './schemas/accelerators.js'

/** The v1 object. `type`, `device_type` and `capability` are the columns the v1 client prints. */
export function acceleratorView(a: Accelerator, base: string) {
  const rc = a.attributes.find((x) => x.key === 'rc')?.value
  const traits = a.attributes.filter((x) => x.key.startsWith('trait')).map((x) => x.value)
  const others = Object.fromEntries(
    a.attributes
      .filter((x) => x.key !== 'rc' && !x.key.startsWith('trait'))
      .map((x) => [x.key, x.value]),
  )
  const deviceType = rc ?? a.deviceType
  return {
    uuid: a.uuid,
    name: a.name,
    description: `${a.deviceType} ${a.vendor}:${a.model} at ${a.address} on ${a.hostname}`,
    type: a.deviceType,
    device_type: deviceType,
    capability: traits.join(','),
    acc_specs:
      a.accSpecs !== null
        ? (JSON.parse(a.accSpecs) as Record<string, unknown>)
        : {
            remote: a.remote ? 1 : 0,
            num: a.numAccelerators,
            device_type: deviceType,
            acc_capability: { ...others, num: a.numAccelerators, traits },
          },
    hostname: a.hostname,
    vendor_id: a.vendor,
    product_id: a.model,
    lifecycle: a.lifecycle,
    lifecycle_reason: a.lifecycleReason,
    health: a.health,
    health_reason: a.healthReason,
    health_updated_at: a.healthUpdatedAt,
    attached_to: a.attachedTo,
    attachments: a.attachments.map((x) => ({
      arq_uuid: x.arqUuid,
      instance_uuid: x.instanceUuid,
      hostname: x.hostname,
      api: x.api,
      state: x.state,
    })),
    created_at: a.createdAt,
    updated_at: a.updatedAt,
    links: [{ href: `${base}/v1/accelerators/${a.uuid}`, rel: 'self' }],
  }
}

export function acceleratorRoutes(app: FastifyInstance, { db, conductor, baseUrl }: V1Env): void {
  resource(app, '/accelerators', {
    GET: {
      policy: 'cyborg:v1_accelerator:get_all',
      doc: docs.listAccelerators,
      handler: async (request) => {
        const query = request.query as QueryOf<typeof docs.ListAcceleratorsQuery>
        const paging = pagingOf<(typeof ACCELERATOR_SORT_KEYS)[number]>(query)
        const filter = {
          ...paging,
          deviceType: query.device_type,
          hostname: query.hostname,
          project: visibleProject(request.ctx),
        }
        const accelerators = await listAccelerators(db, filter).catch((err: unknown) => {
          throw markerNotFoundToInvalid(err)
        })
        const base = baseUrl(request)
        const body: { accelerators: unknown[]; next?: string } = {
          accelerators: accelerators.map((a) => acceleratorView(a, base)),
        }
        if (paging.limit !== undefined && accelerators.length === paging.limit) {
          const next = new URLSearchParams()
          for (const [key, value] of Object.entries(query))
            if (key !== 'marker' && typeof value === 'string') next.set(key, value)
          next.set('marker', accelerators.at(-1)!.uuid)
          body.next = `${base}/v1/accelerators?${next.toString()}`
        }
        return body
      },
    },
  })

  /**
   * The accelerator in the path, with its spec's ETag in the reply; a non-admin sees only its
   * project's attachments (another project's are neither shown nor named).
   */
  const show = async (request: FastifyRequest, reply: FastifyReply, uuid: string) => {
    const accelerator = await getAccelerator(db, uuid, visibleProject(request.ctx))
    reply.header('etag', accSpecsEtag(accelerator.accSpecs))
    return acceleratorView(accelerator, baseUrl(request))
  }

  resource(app, '/accelerators/:uuid', {
    GET: {
      policy: 'cyborg:v1_accelerator:get_one',
      doc: docs.getAccelerator,
      handler: async (request, reply) => show(request, reply, pathUuid(request)),
    },
    PUT: {
      policy: 'cyborg:v1_accelerator:attach',
      doc: docs.attachAccelerator,
      handler: async (request, reply) => {
        const accelerator = await getAccelerator(db, pathUuid(request))
        const target = parseAttachBody(request.body, accelerator)
        const { projectId, isAdmin } = request.ctx
        await conductor.attachAccelerator({
          uuid: accelerator.uuid,
          target,
          projectId,
          ...(isAdmin ? { seesAllProjects: true } : {}),
        })
        return show(request, reply, accelerator.uuid)
      },
    },
    DELETE: {
      policy: 'cyborg:v1_accelerator:detach',
      doc: docs.detachAccelerator,
      handler: async (request, reply) => {
        const uuid = pathUuid(request)
        const asked = (request.query as QueryOf<typeof docs.DetachQuery>).instance_uuid
        const instance = asked?.toLowerCase()
        const projectId = visibleProject(request.ctx)
        // Scoped here too (the conductor scopes by projectId as well): with nothing of the
        // caller's on it (for the instance), whoever else is attached, the conductor is not asked.
        if (projectId !== undefined && !(await hasRequestFor(db, uuid, instance, projectId))) {
          await getAccelerator(db, uuid, projectId) // an unknown accelerator is its own 404
          if (instance !== undefined) throw attachmentNotFound(uuid, instance)
          return reply.code(204).send()
        }
        await conductor.detachAccelerator({
          uuid,
          ...(instance === undefined ? {} : { instanceUuid: instance }),
          ...(projectId === undefined ? {} : { projectId }),
        })
        return reply.code(204).send()
      },
    },
  })

  resource(app, '/accelerators/:uuid/acc_specs', {
    PUT: {
      policy: 'cyborg:v1_accelerator:update_spec',
      doc: docs.setAccSpecs,
      handler: async (request, reply) => {
        const uuid = pathUuid(request)
        const accSpecs = parseAccSpecsBody(request.body)
        const ifMatch = request.headers['if-match']
        await conductor.setAcceleratorSpecs(
          ifMatch === undefined ? { uuid, accSpecs } : { uuid, accSpecs, ifMatch },
        )
        return show(request, reply, uuid)
      },
    },
  })

  resource(app, '/accelerators/:uuid/ready', {
    POST: {
      policy: 'cyborg:v1_accelerator:ready',
      doc: docs.readyAccelerator,
      handler: async (request, reply) => {
        const accelerator = await getAccelerator(db, pathUuid(request))
        await conductor.markDeviceReady({ uuid: accelerator.deviceUuid })
        return show(request, reply, accelerator.uuid)
      },
    },
  })
}

/** The uuid in the path, lower-cased; anything else is a 404 naming it. */
function pathUuid(request: FastifyRequest): string {
  const { uuid } = request.params as { uuid: string }
  if (!isUuidLike(uuid))
    throw new NotFoundError(`accelerator ${uuid} not found`, {
      code: 'ACCELERATOR_NOT_FOUND',
      details: { uuid },
    })
  return uuid.toLowerCase()
}
