/**
 * The HTTP API: a Fastify app serving OpenStack Cyborg's v2 API (under `/v2` and without the
 * prefix), version discovery at `/` and `/v2`, and `/healthcheck`. It reads through the
 * repository functions of src/db and writes only through the conductor.
 */
import Fastify, { LogController, type FastifyInstance } from 'fastify'
import { installBodyParser } from './body-parser.js'
import { installAuth } from './auth.js'
import { installPolicy } from './policy-hook.js'
import { createEnforcerFromRules } from '../policy/index.js'
import { identify, requestId } from './context.js'
import { installErrorHandling } from './errors.js'
import { installHandlerDeadline } from './deadline.js'
import { clientErrorHandler, closeSilentConnections, frameworkErrors } from './client-errors.js'
import { healthcheckRoutes } from './healthcheck.js'
import { installMetrics } from './metrics.js'
import { createBaseUrl } from './links.js'
import { deferredChildLogger } from './request-logger.js'
import { rootRoutes } from './versions.js'
import { v1Plugin } from './v1/index.js'
import { v2Plugin } from './v2/index.js'
import { installTelemetryFeed } from './telemetry-feed.js'
import { installOpenApi } from './openapi.js'
import { dashboardRoutes } from './dashboard/dashboard.js'
import { sessionRoutes } from './dashboard/session.js'
import { createFleetReads } from './v2/fleet-reads.js'
import { createEventHub } from './v2/event-hub.js'
import { AJV_OPTIONS } from './validation-errors.js'
import { lazyValidators } from './lazy-validators.js'
import type { ApiDeps, ApiOptions, ApiTimeouts } from './types.js'

export type { ApiDeps, ApiOptions, RequestContext } from './types.js'

/** 1 MiB. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024
/** `[api] max_arqs_per_request`'s default. */
export const DEFAULT_MAX_ARQS = 64
/** The `[api]` time limits' defaults, in ms (docs/configuration.md, "Time limits"). */
export const DEFAULT_TIMEOUTS: ApiTimeouts = {
  headersMs: 10_000,
  requestMs: 30_000,
  handlerMs: 60_000,
  keepAliveMs: 65_000,
  idleMs: 120_000,
}

/**
 * Builds the app; the caller listens (`app.listen`) or injects (`app.inject`) and closes it.
 * Per-request log lines are off (they cost throughput); at debug level one summary line per
 * request is written, carrying `request_id`.
 */
export async function createApp(deps: ApiDeps, options: ApiOptions = {}): Promise<FastifyInstance> {
  const { bodyLimit = DEFAULT_BODY_LIMIT, maxArqsPerRequest = DEFAULT_MAX_ARQS } = options
  const limits = { ...DEFAULT_TIMEOUTS, ...options.timeouts }
  // Node checks headers_timeout and request_timeout on this period (30 s by default), so a slow
  // client would otherwise keep its connection up to 30 s past its limit.
  const nodeLimits = { headersTimeout: limits.headersMs, connectionsCheckingInterval: 1000 }
  const validators = lazyValidators()
  const app = Fastify({
    loggerInstance: deps.log,
    logController: new LogController({
      disableRequestLogging: true,
      requestIdLogLabel: 'request_id',
    }),
    childLoggerFactory: deferredChildLogger,
    genReqId: requestId,
    requestIdHeader: false,
    bodyLimit,
    requestTimeout: limits.requestMs,
    keepAliveTimeout: limits.keepAliveMs,
    connectionTimeout: limits.idleMs,
    // Node's `optimizeEmptyRequests`: a request without Content-Length or Transfer-Encoding has no
    // body, so Node skips the body stream's machinery (≈ 4 µs of a 45 µs GET). Such a stream is
    // ended without ever emitting 'end', so nothing may wait to read it: body-parser.ts's
    // `noBodyNoContentType` makes sure Fastify does not (issue 13: it hung on a Content-Type alone).
    http: { ...nodeLimits, optimizeEmptyRequests: true },
    routerOptions: { ignoreTrailingSlash: true },
    clientErrorHandler: clientErrorHandler(deps.log),
    frameworkErrors,
    // `[api] enable_ssl_api`: HTTPS only; with a CA, a client certificate it signed is required.
    ...(options.https === undefined
      ? {}
      : {
          https: {
            ...nodeLimits,
            ...options.https,
            ...(options.https.ca === undefined
              ? {}
              : { requestCert: true, rejectUnauthorized: true }),
          },
        }),
    // Strict validation: never strip unknown fields or coerce types (validation-errors.ts).
    ajv: {
      customOptions: {
        ...AJV_OPTIONS.customOptions,
        keywords: [...AJV_OPTIONS.customOptions.keywords],
      },
    },
    // Each route's validators are compiled on its first request, not at start (lazy-validators.ts).
    schemaController: { compilersFactory: { buildValidator: validators.buildValidator } },
  }) as unknown as FastifyInstance
  validators.register(app)

  closeSilentConnections(app.server, limits.headersMs, deps.log, options.https !== undefined)
  // First: the document generators must see every route registered after them.
  await installOpenApi(app)
  app.decorateRequest('ctx', null as never)
  app.decorateRequest('apiMinor', 0)
  installBodyParser(app)
  installErrorHandling(app)
  installHandlerDeadline(app, limits.handlerMs)
  app.addHook('onRequest', identify)
  if (options.auth) installAuth(app, options.auth)
  const enforcer = options.enforcer ?? createEnforcerFromRules()
  installPolicy(app, enforcer)
  if (deps.metrics) installMetrics(app, deps.metrics, deps.exposition)
  if (deps.log.isLevelEnabled('debug')) {
    app.addHook('onResponse', (request, reply, done) => {
      request.log.debug(
        {
          method: request.method,
          url: request.url,
          status: reply.statusCode,
          ms: Math.round(reply.elapsedTime),
        },
        'request',
      )
      done()
    })
  }

  const baseUrl = createBaseUrl(options.publicEndpoint, options.trustedProxies)
  rootRoutes(app, baseUrl)
  healthcheckRoutes(
    app,
    { db: deps.db, bus: deps.bus },
    { ...options.healthcheck, serviceDownAfterMs: options.serviceDownAfterMs },
  )
  dashboardRoutes(app)
  sessionRoutes(app, options.auth, enforcer)
  const env = {
    db: deps.db,
    conductor: deps.conductor,
    baseUrl,
    maxArqsPerRequest,
    serviceDownAfterMs: options.serviceDownAfterMs,
    quota: options.quota,
    fleet: createFleetReads(deps.db, options.fleetCacheMs),
    enforcer,
    events: createEventHub(deps.db, deps.log, options.eventStream),
  }
  // Before the server waits for its connections: the streams would hold it open.
  app.addHook('preClose', (done) => {
    env.events.close()
    done()
  })
  await app.register(v1Plugin, {
    prefix: '/v1',
    db: deps.db,
    conductor: deps.conductor,
    baseUrl,
    serviceDownAfterMs: options.serviceDownAfterMs,
    telemetry: await installTelemetryFeed(app, deps.telemetryBus),
  })
  await app.register(v2Plugin, { prefix: '/v2', versionDoc: true, ...env })
  await app.register(v2Plugin, { prefix: '', versionDoc: false, ...env })
  return app
}
