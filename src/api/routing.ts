/**
 * Registers the handlers of one path and answers every other method on it with 405 and an
 * `Allow` header (Fastify alone would answer 404).
 */
import type {
  FastifyInstance,
  RouteShorthandOptions,
  RouteHandlerMethod,
  HTTPMethods,
} from 'fastify'
import { ApiError } from './errors.js'

/**
 * A handler plus its route options (schema, bodyLimit, …) and the policy rule that guards it
 * (issue 6: enforced in one place before the handler runs; a route cannot be declared without one).
 */
export type RouteSpec = RouteShorthandOptions & { handler: RouteHandlerMethod; policy: string }

/** The rule of a route, as `resource()` records it in the route's config. */
export interface RouteConfig {
  policy?: string
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
const ALL: readonly HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

/** Methods that another file adds to a path, by app instance (see {@link extendResource}). */
const extensions = new WeakMap<FastifyInstance, Map<string, Partial<Record<Method, RouteSpec>>>>()

/**
 * Adds methods to a path that another file declares with {@link resource} later on the same app
 * instance (`POST /v1/accelerators` lives apart from the reads): `resource()` then registers them
 * with its own and lists them in its 405 `Allow`. Call it before that `resource()`.
 */
export function extendResource(
  app: FastifyInstance,
  url: string,
  methods: Partial<Record<Method, RouteSpec>>,
): void {
  const byUrl = extensions.get(app) ?? new Map<string, Partial<Record<Method, RouteSpec>>>()
  byUrl.set(url, { ...byUrl.get(url), ...methods })
  extensions.set(app, byUrl)
}

/** `resource(app, '/devices/:uuid', { GET: {...}, DELETE: {...} })`. */
export function resource(
  app: FastifyInstance,
  url: string,
  declared: Partial<Record<Method, RouteSpec>>,
): void {
  const methods = { ...extensions.get(app)?.get(url), ...declared }
  const given = Object.keys(methods) as Method[]
  const allowed: HTTPMethods[] = given.includes('GET') ? [...given, 'HEAD'] : [...given]
  for (const method of given) {
    const { policy, config, ...spec } = methods[method]!
    app.route({
      ...spec,
      method,
      url,
      config: { ...(config as object | undefined), policy } satisfies RouteConfig,
    })
  }
  const allow = ALL.filter((m) => allowed.includes(m)).join(', ')
  const others = ALL.filter((m) => !allowed.includes(m))
  app.route({
    method: others,
    url,
    handler: async (request, reply) => {
      reply.header('allow', allow)
      throw new ApiError(
        405,
        `Method ${request.method} is not allowed on this resource; allowed: ${allow}`,
      )
    },
  })
}
