/**
 * The seed's v1 API under `/v1` (api-v1-and-cli.md): its version document and the accelerators.
 * v1 has no microversions. It shares the error format, request ids and logging with v2.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { v1VersionDoc } from '../versions.js'
import type { ConductorRpc } from '../../rpc/conductor-rpc.js'
import type { Db } from '../types.js'
import { acceleratorRoutes } from './accelerators.js'
import { acceleratorCreateRoutes } from './accelerators-create.js'
import { backendServiceRoutes } from './backend-services.js'
import { driverRoutes } from './drivers.js'
import { statusRoutes } from './status.js'

export interface V1Env {
  db: Db
  /** Every v1 write goes to the conductor. */
  conductor: ConductorRpc
  /** The base URL of links for this request (no trailing slash). */
  baseUrl: (request: FastifyRequest) => string
  /** `GET /v1/status` shows a process down after this long without a heartbeat. @default 150000 */
  serviceDownAfterMs?: number
}

export async function v1Plugin(app: FastifyInstance, options: V1Env): Promise<void> {
  app.get('/', async (request) => v1VersionDoc(options.baseUrl(request), 'v1.0'))
  // Before acceleratorRoutes: it declares the paths that the POST routes join.
  acceleratorCreateRoutes(app, options)
  acceleratorRoutes(app, options)
  driverRoutes(app, options)
  backendServiceRoutes(app, options)
  statusRoutes(app, options)
}
