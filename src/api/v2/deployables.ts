/**
 * Deployables: `GET /deployables` (limit, marker, sort_key, sort_dir), `GET /deployables/{uuid}`,
 * and `PATCH /deployables/{uuid}/program` (admin; the conductor programs it, docs/fpga.md).
 * Attributes come from one extra query per page (never one per deployable).
 */
import type { Static } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { listAttributes, listAttributesByDeployableIds } from '../../db/reads/attribute-reads.js'
import type { DEPLOYABLE_SORT_KEYS } from '../../db/reads/deployable-reads.js'
import { getDeployable, listDeployables } from '../../db/reads/deployable-reads.js'
import { DriverError, invalidField, NotFoundError } from '../../domain/errors.js'
import { ApiError } from '../errors.js'
import { isUuidLike } from '../../domain/ids.js'
import { markerNotFoundToInvalid, pagingOf } from '../query.js'
import type { QueryOf } from '../schemas/common.js'
import { resource } from '../routing.js'
import type { V2Env } from './env.js'
import { deployableView } from './views.js'
import {
  getDeployable as getDoc,
  listDeployables as listDoc,
  programDeployable as programDoc,
  ProgramBody,
  type ListDeployablesQuery,
} from './schemas/inventory.js'

const notFound = (uuid: string) =>
  new NotFoundError(`deployable ${uuid} not found`, { details: { uuid } })

/** The image of OpenStack Cyborg's one-op program body, or a 400 naming what is wrong. */
function imageOf(body: Static<typeof ProgramBody>): string {
  const [op] = body
  if (op!.path !== '/program')
    throw invalidField('0/path', `must be /program, got ${JSON.stringify(op!.path)}`)
  if (op!.op !== 'replace')
    throw invalidField('0/op', `must be replace, got ${JSON.stringify(op!.op)}`)
  const image = op!.value[0]!.image_uuid
  if (!isUuidLike(image))
    throw invalidField(
      '0/value/0/image_uuid',
      `must be a Glance image uuid, got ${JSON.stringify(image)}`,
    )
  return image
}

export function deployableRoutes(app: FastifyInstance, { db, conductor, baseUrl }: V2Env): void {
  resource(app, '/deployables', {
    GET: {
      policy: 'cyborg:deployable:get_all',
      doc: listDoc,
      handler: async (request) => {
        const query = request.query as QueryOf<typeof ListDeployablesQuery>
        const paging = pagingOf<(typeof DEPLOYABLE_SORT_KEYS)[number]>(query)
        const deployables = await listDeployables(db, paging).catch((err: unknown) => {
          throw markerNotFoundToInvalid(err)
        })
        const attributes = await listAttributesByDeployableIds(
          db,
          deployables.map((d) => d.id),
        )
        const base = baseUrl(request)
        return {
          deployables: deployables.map((d) => deployableView(d, attributes.get(d.id) ?? [], base)),
        }
      },
    },
  })

  resource(app, '/deployables/:uuid', {
    GET: {
      policy: 'cyborg:deployable:get_one',
      doc: getDoc,
      handler: async (request: FastifyRequest) => {
        const { uuid } = request.params as { uuid: string }
        if (!isUuidLike(uuid)) throw notFound(uuid)
        return readDeployable(uuid, request)
      },
    },
  })

  const readDeployable = async (uuid: string, request: FastifyRequest) => {
    const deployable = await getDeployable(db, uuid)
    const attributes = await listAttributes(db, { deployableId: deployable.id })
    return deployableView(deployable, attributes, baseUrl(request))
  }

  resource(app, '/deployables/:uuid/program', {
    PATCH: {
      policy: 'cyborg:deployable:program',
      doc: programDoc,
      schema: { body: ProgramBody },
      handler: async (request: FastifyRequest) => {
        const { uuid } = request.params as { uuid: string }
        if (!isUuidLike(uuid)) throw notFound(uuid)
        const imageUuid = imageOf(request.body as Static<typeof ProgramBody>)
        await conductor
          .programDeployable({
            uuid,
            imageUuid,
            userId: request.ctx.userId,
            projectId: request.ctx.projectId,
          })
          .catch((err: unknown) => {
            // The card's tool failed (not this service): a bad gateway, as a failed upstream is.
            if (err instanceof DriverError) throw new ApiError(502, err.message)
            throw err
          })
        return readDeployable(uuid, request)
      },
    },
  })
}
