/**
 * `POST /v1/accelerators` and `POST /v1/accelerators/{uuid}` (seed 003 'POST /accelerators/{uuid}'):
 * register an accelerator that no agent discovers, e.g. a remote one in a standalone accelerator
 * rack. The body follows the seed's JSON Schema exactly: `name` (string, required), `uuid` (string,
 * format uuid), nothing else. The conductor hands it to an agent that runs the `remote` driver and
 * answers once that agent's report is in (docs/api-v1.md, "Remote accelerators (POST)").
 *
 * 201 with an empty body and `Location: <base>/v1/accelerators/<uuid>` (absolute, built like every
 * other link); 400 naming the field; 409 when the name or uuid exists, or no agent runs the driver.
 */
import { Type, type Static } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest, FastifyInstance } from 'fastify'
import { isUuidLike } from '../../domain/ids.js'
import { invalidField } from '../../domain/errors.js'
import { extendResource, type RouteSpec } from '../routing.js'
import type { V1Env } from './env.js'
import { createAccelerator, createAcceleratorAt } from './schemas/accelerators.js'

/** The seed's schema, word for word: `additionalProperties: false`, only `name` required. */
export const AcceleratorCreateBody = Type.Object(
  {
    name: Type.String(),
    uuid: Type.Optional(Type.String({ format: 'uuid' })),
  },
  { additionalProperties: false },
)
export type AcceleratorCreateBody = Static<typeof AcceleratorCreateBody>

/**
 * Adds the two POST routes to the accelerator paths; call it before `acceleratorRoutes` declares
 * those paths (their 405 `Allow` then lists POST).
 */
export function acceleratorCreateRoutes(app: FastifyInstance, { conductor, baseUrl }: V1Env): void {
  const create = async (request: FastifyRequest, reply: FastifyReply, inPath?: string) => {
    const body = request.body as AcceleratorCreateBody
    let uuid = body.uuid?.toLowerCase()
    if (inPath !== undefined) {
      if (!isUuidLike(inPath))
        throw invalidField('uuid', `the path must end in a UUID, got ${JSON.stringify(inPath)}`)
      if (uuid !== undefined && uuid !== inPath.toLowerCase()) {
        throw invalidField(
          'uuid',
          `${JSON.stringify(body.uuid)} differs from the uuid in the path (${inPath})`,
        )
      }
      uuid = inPath.toLowerCase()
    }
    const created = await conductor.registerRemoteAccelerator(
      uuid === undefined ? { name: body.name } : { name: body.name, uuid },
    )
    return reply
      .code(201)
      .header('location', `${baseUrl(request)}/v1/accelerators/${created.uuid}`)
      .send()
  }

  const schema = { body: AcceleratorCreateBody }
  const collection: RouteSpec = {
    policy: 'cyborg:v1_accelerator:create',
    doc: createAccelerator,
    schema,
    handler: async (request, reply) => create(request, reply),
  }
  const item: RouteSpec = {
    policy: 'cyborg:v1_accelerator:create',
    doc: createAcceleratorAt,
    schema,
    handler: async (request, reply) =>
      create(request, reply, (request.params as { uuid: string }).uuid),
  }
  extendResource(app, '/accelerators', { POST: collection })
  extendResource(app, '/accelerators/:uuid', { POST: item })
}
