/**
 * Registers the handlers of one path and answers every other method on it with 405 and an
 * `Allow` header (Fastify alone would answer 404).
 */
import type { FastifyInstance, RouteShorthandOptions, RouteHandlerMethod, HTTPMethods } from 'fastify'
import { ApiError } from './errors.js'

/** A handler plus its route options (schema, bodyLimit, …). */
export type RouteSpec = RouteShorthandOptions & { handler: RouteHandlerMethod }

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
const ALL: readonly HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

/** `resource(app, '/devices/:uuid', { GET: {...}, DELETE: {...} })`. */
export function resource(app: FastifyInstance, url: string, methods: Partial<Record<Method, RouteSpec>>): void {
  const given = Object.keys(methods) as Method[]
  const allowed: HTTPMethods[] = given.includes('GET') ? [...given, 'HEAD'] : [...given]
  for (const method of given) app.route({ ...methods[method]!, method, url })
  const allow = ALL.filter((m) => allowed.includes(m)).join(', ')
  const others = ALL.filter((m) => !allowed.includes(m))
  app.route({
    method: others,
    url,
    handler: async (request, reply) => {
      reply.header('allow', allow)
      throw new ApiError(405, `Method ${request.method} is not allowed on this resource; allowed: ${allow}`)
    },
  })
}
