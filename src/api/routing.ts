/**
 * Registers the handlers of one path and answers every other method on it with 405 and an
 * `Allow` header (Fastify alone would answer 404).
 */
import type {
  FastifyContextConfig,
  FastifyInstance,
  RouteShorthandOptions,
  RouteHandlerMethod,
  HTTPMethods,
  preValidationHookHandler,
} from 'fastify'
import { NotFoundError } from '../domain/errors.js'
import { ApiError } from './errors.js'
import type { RouteDoc } from './schemas/common.js'

/**
 * A handler plus its route options (schema, bodyLimit, …), the policy rule that guards it
 * (issue 6: enforced in one place before the handler runs; a route cannot be declared without one)
 * and its documentation (issue 17: the OpenAPI documents, src/api/openapi.ts; nor without one).
 */
export type RouteSpec = RouteShorthandOptions & {
  handler: RouteHandlerMethod
  policy: string
  doc: RouteDoc
  /**
   * v2 only: the microversion minor the route appears at. Below it the route is a 404 naming the
   * version it needs, before its query string or body is looked at.
   */
  since?: number
}

/** The preValidation gate of {@link RouteSpec.since}. */
function sinceGate(minor: number): preValidationHookHandler {
  return (request, _reply, done) => {
    if (request.apiMinor >= minor) return done()
    const path = request.url.split('?')[0]
    done(
      new NotFoundError(
        `${request.method} ${path} needs microversion 2.${minor} (OpenStack-API-Version: accelerator 2.${minor})`,
        { details: { field: 'OpenStack-API-Version' } },
      ),
    )
  }
}

declare module 'fastify' {
  /** What a route records in its config: its rule and its documentation. */
  interface FastifyContextConfig {
    /** The policy rule (src/api/policy-hook.ts); none on the public routes. */
    policy?: string
    /** The route's part of the OpenAPI documents (src/api/openapi.ts). */
    doc?: RouteDoc
    /** Set on the routes of the v2 plugin (src/api/v2/index.ts): `/v2`, or `''` unprefixed. */
    v2Prefix?: string
  }
}

/** What a route records in its config (see the FastifyContextConfig augmentation above). */
export type RouteConfig = FastifyContextConfig

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
    const { policy, doc, config, schema, since, preValidation, ...spec } = methods[method]!
    const gates = [
      ...(since === undefined ? [] : [sinceGate(since)]),
      ...(preValidation === undefined ? [] : [preValidation].flat()),
    ]
    const routeConfig: RouteConfig = { ...(config as object | undefined), policy, doc }
    // The documented query string is the one checked (issue 17): no route reads a parameter by hand.
    const checked =
      doc.querystring === undefined ? schema : { querystring: doc.querystring, ...schema }
    app.route({
      ...spec,
      ...(checked === undefined ? {} : { schema: checked }),
      ...(gates.length === 0 ? {} : { preValidation: gates as preValidationHookHandler[] }),
      method,
      url,
      config: routeConfig,
    })
  }
  const allow = ALL.filter((m) => allowed.includes(m)).join(', ')
  const others = ALL.filter((m) => !allowed.includes(m))
  const notAllowed: RouteHandlerMethod = async (request, reply) => {
    reply.header('allow', allow)
    throw new ApiError(
      405,
      `Method ${request.method} is not allowed on this resource; allowed: ${allow}`,
    )
  }
  app.route({ method: others, url, handler: notAllowed })
}
