/**
 * `/v1/accelerators`, the seed's API (api-v1-and-cli.md), read side: the list (filters
 * `device_type` and `hostname`, with `limit`, `marker`, `sort_key`, `sort_dir` and a `next` link
 * when a page is full) and one accelerator. Both are views over the one inventory.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ACCELERATOR_SORT_KEYS, getAccelerator, listAccelerators, type Accelerator } from '../../db/accelerators-v1.js'
import { isUuidLike } from '../../domain/device-profile.js'
import { NotFoundError } from '../../domain/errors.js'
import { markerNotFoundToInvalid, pagingParams, stringParam, type Query } from '../query.js'
import { resource } from '../routing.js'
import type { V1Env } from './index.js'

/** The v1 object. `type`, `device_type` and `capability` are the columns the v1 client prints. */
export function acceleratorView(a: Accelerator, base: string) {
  const rc = a.attributes.find((x) => x.key === 'rc')?.value
  const traits = a.attributes.filter((x) => x.key.startsWith('trait')).map((x) => x.value)
  const others = Object.fromEntries(a.attributes.filter((x) => x.key !== 'rc' && !x.key.startsWith('trait')).map((x) => [x.key, x.value]))
  const deviceType = rc ?? a.deviceType
  return {
    uuid: a.uuid,
    name: a.name,
    description: `${a.deviceType} ${a.vendor}:${a.model} at ${a.address} on ${a.hostname}`,
    type: a.deviceType,
    device_type: deviceType,
    capability: traits.join(','),
    acc_specs: { remote: 0, num: a.numAccelerators, device_type: deviceType, acc_capability: { ...others, num: a.numAccelerators, traits } },
    hostname: a.hostname,
    vendor_id: a.vendor,
    product_id: a.model,
    lifecycle: a.lifecycle,
    lifecycle_reason: a.lifecycleReason,
    attached_to: a.attachedTo,
    created_at: a.createdAt,
    updated_at: a.updatedAt,
    links: [{ href: `${base}/v1/accelerators/${a.uuid}`, rel: 'self' }],
  }
}

export function acceleratorRoutes(app: FastifyInstance, { db, baseUrl }: V1Env): void {
  resource(app, '/accelerators', {
    GET: {
      handler: async (request) => {
        const query = request.query as Query
        const paging = pagingParams(query, ACCELERATOR_SORT_KEYS)
        const filter = { ...paging, deviceType: stringParam(query, 'device_type'), hostname: stringParam(query, 'hostname') }
        const accelerators = await listAccelerators(db, filter).catch((err: unknown) => {
          throw markerNotFoundToInvalid(err)
        })
        const base = baseUrl(request)
        const body: { accelerators: unknown[]; next?: string } = { accelerators: accelerators.map((a) => acceleratorView(a, base)) }
        if (paging.limit !== undefined && accelerators.length === paging.limit) {
          const next = new URLSearchParams()
          for (const [key, value] of Object.entries(query)) if (key !== 'marker' && typeof value === 'string') next.set(key, value)
          next.set('marker', accelerators.at(-1)!.uuid)
          body.next = `${base}/v1/accelerators?${next.toString()}`
        }
        return body
      },
    },
  })

  resource(app, '/accelerators/:uuid', {
    GET: {
      handler: async (request: FastifyRequest) => {
        const { uuid } = request.params as { uuid: string }
        if (!isUuidLike(uuid)) throw new NotFoundError(`accelerator ${uuid} not found`, { code: 'ACCELERATOR_NOT_FOUND', details: { uuid } })
        return acceleratorView(await getAccelerator(db, uuid), baseUrl(request))
      },
    },
  })
}
