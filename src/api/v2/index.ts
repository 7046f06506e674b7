/**
 * The v2 API as one encapsulated plugin, registered twice: under `/v2` and without a prefix
 * (OpenStack Cyborg routes any first segment that is not `v2` to v2). Its `onRequest` hook
 * negotiates the microversion and sets the version headers on every response, errors included.
 */
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
} from 'fastify'
import { ApiError } from '../errors.js'
import type { RouteConfig } from '../routing.js'
import {
  negotiateMicroversion,
  SERVICE_TYPE,
  VERSION_HEADER,
  VERSION_RESPONSE_HEADERS,
} from '../microversion.js'
import { v2DocRoutes } from '../versions.js'
import { arqRoutes } from './arqs.js'
import { attributeRoutes } from './attributes.js'
import { capacityRoutes } from './capacity.js'
import { deployableRoutes } from './deployables.js'
import { deviceProfileRoutes } from './device-profiles.js'
import { deviceRoutes } from './devices.js'
import { deviceHandleRoutes } from './device-handles.js'
import { deviceSummaryRoutes } from './device-summary.js'
import type { V2Env } from './env.js'
import { explainRoutes } from './explain.js'
import { quotaRoutes } from './quota.js'
import { custodyRoutes } from './custody.js'
import { eventRoutes } from './events.js'
import { webhookRoutes } from './webhooks.js'

function microversionHook(
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
): void {
  const v = negotiateMicroversion(request.headers[VERSION_HEADER])
  if (v.error !== undefined) {
    reply.headers(VERSION_RESPONSE_HEADERS[0]!)
    done(new ApiError(406, v.error))
    return
  }
  if (v.bare) {
    // As OpenStack Cyborg 17.0.0 (cyborg/api/controllers/base.py, 7faf80e): accepted, logged.
    request.log.warn(
      { header: request.headers[VERSION_HEADER] },
      'OpenStack-API-Version without the service type is deprecated: send ' +
        `"OpenStack-API-Version: ${SERVICE_TYPE} <version>"`,
    )
  }
  request.apiMinor = v.minor
  reply.headers(VERSION_RESPONSE_HEADERS[v.minor]!)
  done()
}

export interface V2PluginOptions extends V2Env {
  /** Serve the v2 version document at the plugin's root (only under the `/v2` prefix). */
  versionDoc: boolean
}

export async function v2Plugin(app: FastifyInstance, options: V2PluginOptions): Promise<void> {
  app.addHook('onRequest', microversionHook)
  // The OpenAPI documents (src/api/openapi.ts) show the microversion header on these routes and
  // tell the unprefixed copies apart.
  const v2Prefix = options.versionDoc ? '/v2' : ''
  app.addHook('onRoute', (route) => {
    route.config = { ...(route.config as RouteConfig | undefined), v2Prefix } satisfies RouteConfig
  })
  if (options.versionDoc) v2DocRoutes(app, options.baseUrl)
  deviceProfileRoutes(app, options)
  explainRoutes(app, options)
  deviceSummaryRoutes(app, options)
  deviceRoutes(app, options)
  deviceHandleRoutes(app, options)
  deployableRoutes(app, options)
  attributeRoutes(app, options)
  arqRoutes(app, options)
  webhookRoutes(app, options)
  capacityRoutes(app, options)
  quotaRoutes(app, options)
  custodyRoutes(app, options)
  eventRoutes(app, options)
}
