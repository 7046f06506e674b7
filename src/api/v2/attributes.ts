/**
 * Attributes: `GET /attributes` (?deployable_id=&key=), `GET /attributes/{uuid}`,
 * `POST /attributes` {deployable_id, key, value} → 201, `DELETE /attributes/{uuid}` → 204.
 */
import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { getAttribute, listAttributes } from '../../db/reads/attribute-reads.js'
import { NotFoundError } from '../../domain/errors.js'
import { isUuidLike } from '../../domain/ids.js'
import type { QueryOf } from '../schemas/common.js'
import { resource } from '../routing.js'
import type { V2Env } from './env.js'
import { attributeView } from './views.js'
import * as docs from './schemas/inventory.js'

/** POST body. `deployable_id` may be an integer or a string of digits (the api-ref sample sends "1"). */
const AttributeCreateBody = Type.Object(
  {
    deployable_id: Type.Unsafe<number | string>({
      type: ['integer', 'string'],
      minimum: 1,
      pattern: '^[1-9][0-9]{0,14}$',
    }),
    key: Type.String({ minLength: 1, maxLength: 255 }),
    value: Type.String({ maxLength: 65535 }),
  },
  { additionalProperties: false },
)

/** The `:uuid` path parameter; a malformed one is 404 like an unknown one. */
function uuidParam(request: FastifyRequest): string {
  const { uuid } = request.params as { uuid: string }
  if (!isUuidLike(uuid))
    throw new NotFoundError(`attribute ${uuid} not found`, { details: { uuid } })
  return uuid
}

export function attributeRoutes(app: FastifyInstance, { db, conductor, baseUrl }: V2Env): void {
  resource(app, '/attributes', {
    GET: {
      policy: 'cyborg:attribute:get_all',
      doc: docs.listAttributes,
      handler: async (request) => {
        const query = request.query as QueryOf<typeof docs.ListAttributesQuery>
        const attributes = await listAttributes(db, {
          deployableId: query.deployable_id === undefined ? undefined : Number(query.deployable_id),
          key: query.key,
        })
        const base = baseUrl(request)
        return { attributes: attributes.map((a) => attributeView(a, base)) }
      },
    },
    POST: {
      policy: 'cyborg:attribute:create',
      doc: docs.createAttribute,
      schema: { body: AttributeCreateBody },
      handler: async (request: FastifyRequest, reply) => {
        const { deployable_id, key, value } = request.body as Static<typeof AttributeCreateBody>
        const attribute = await conductor.createAttribute({
          deployableId: Number(deployable_id),
          key,
          value,
        })
        return reply.code(201).send(attributeView(attribute, baseUrl(request)))
      },
    },
  })

  resource(app, '/attributes/:uuid', {
    GET: {
      policy: 'cyborg:attribute:get_one',
      doc: docs.getAttribute,
      handler: async (request: FastifyRequest) => {
        const uuid = uuidParam(request)
        return attributeView(await getAttribute(db, uuid), baseUrl(request))
      },
    },
    DELETE: {
      policy: 'cyborg:attribute:delete',
      doc: docs.deleteAttribute,
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        await conductor.deleteAttribute({ uuid: uuidParam(request) })
        return reply.code(204).send()
      },
    },
  })
}
