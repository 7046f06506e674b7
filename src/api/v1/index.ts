/**
 * The seed's v1 API under `/v1` (api-v1-and-cli.md): its version document and the accelerators.
 * v1 has no microversions. It shares the error format, request ids and logging with v2.
 */
import type { FastifyInstance } from 'fastify'
import { v1VersionDoc } from '../versions.js'
import { versionDoc } from '../schemas/root.js'
import { acceleratorRoutes } from './accelerators.js'
import { acceleratorCreateRoutes } from './accelerators-create.js'
import { backendServiceRoutes } from './backend-services.js'
import { driverRoutes } from './drivers.js'
import { statusRoutes } from './status.js'
import { telemetryRoutes } from './telemetry.js'
import type { V1Env } from './env.js'

export async function v1Plugin(app: FastifyInstance, options: V1Env): Promise<void> {
  app.get('/', { config: { doc: versionDoc('v1') } }, async (request) =>
    v1VersionDoc(options.baseUrl(request), 'v1.0'),
  )
  // Before acceleratorRoutes: it declares the paths that the POST routes join.
  acceleratorCreateRoutes(app, options)
  acceleratorRoutes(app, options)
  driverRoutes(app, options)
  backendServiceRoutes(app, options)
  statusRoutes(app, options)
  telemetryRoutes(app, options)
}
