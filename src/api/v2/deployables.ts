/**
 * Deployables: `GET /deployables` (limit, marker, sort_key, sort_dir) and `GET /deployables/{uuid}`.
 * Attributes come from one extra query per page (never one per deployable).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { listAttributes, listAttributesByDeployableIds } from '../../db/attributes.js'
import type { DEPLOYABLE_SORT_KEYS } from '../../db/deployables.js'
import { getDeployable, listDeployables } from '../../db/deployables.js'
import { NotFoundError } from '../../domain/errors.js'
import { isUuidLike } from '../../domain/ids.js'
import { markerNotFoundToInvalid, pagingOf } from '../query.js'
import type { QueryOf } from '../schemas/common.js'
import { resource } from '../routing.js'
import type { V2Env } from './env.js'
import { deployableView } from './views.js'
import {
  getDeployable as getDoc,
  listDeployables as listDoc,
  type ListDeployablesQuery,
} from './schemas/inventory.js'

export function deployableRoutes(app: FastifyInstance, { db, baseUrl }: V2Env): void {
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
        if (!isUuidLike(uuid))
          throw new NotFoundError(`deployable ${uuid} not found`, { details: { uuid } })
        const deployable = await getDeployable(db, uuid)
        const attributes = await listAttributes(db, { deployableId: deployable.id })
        return deployableView(deployable, attributes, baseUrl(request))
      },
    },
  })
}
