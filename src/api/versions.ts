/**
 * Version discovery. `GET /` lists the versions; `GET /v2` (and `/v2/`) describes v2, `GET /v1` v1. Both carry an
 * absolute `self` href: keystoneauth fetches it and uses it as the base URL of every call.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { MAX_VERSION, MIN_VERSION } from './microversion.js'
import { rootDoc as rootRouteDoc, versionDoc as versionRouteDoc } from './schemas/root.js'

const DESCRIPTION =
  'Cyborg (accelerator manager) API: device profiles, accelerator requests, devices, deployables and attributes.'

/** The v2 version object; `id` is "v2" in the root list and "v2.0" at /v2, as OpenStack Cyborg answers. */
export function versionDoc(base: string, id: 'v2' | 'v2.0') {
  return {
    id,
    status: 'CURRENT',
    min_version: MIN_VERSION,
    max_version: MAX_VERSION,
    links: [{ href: `${base}/v2/`, rel: 'self' }],
  }
}

/** The seed's v1 (accelerators), still served next to v2; it has no microversions. */
export function v1VersionDoc(base: string, id: 'v1' | 'v1.0') {
  return {
    id,
    status: 'SUPPORTED',
    min_version: '',
    max_version: '',
    links: [{ href: `${base}/v1/`, rel: 'self' }],
  }
}

/** The root document. */
export function rootDoc(base: string) {
  const v2 = versionDoc(base, 'v2')
  return {
    name: 'OpenStack Cyborg API',
    description: DESCRIPTION,
    versions: [v2, v1VersionDoc(base, 'v1')],
    default_version: v2,
  }
}

/** `GET /` (unversioned: no microversion headers, like OpenStack Cyborg). */
export function rootRoutes(app: FastifyInstance, baseUrl: (r: FastifyRequest) => string): void {
  app.get('/', { config: { doc: rootRouteDoc } }, async (request) => rootDoc(baseUrl(request)))
}

/** `GET /v2` inside the v2 plugin, so it carries the microversion headers. */
export function v2DocRoutes(app: FastifyInstance, baseUrl: (r: FastifyRequest) => string): void {
  app.get('/', { config: { doc: versionRouteDoc('v2') } }, async (request) =>
    versionDoc(baseUrl(request), 'v2.0'),
  )
}
