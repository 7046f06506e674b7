/**
 * Keystone unified limits (docs/quota.md), read the way oslo.limit reads them: the service is the
 * one of `[oslo_limit] endpoint_id` (`GET /v3/endpoints/{id}`) or the only one of type
 * `endpoint_service_type`; a project's limit for a resource is its project limit
 * (`GET /v3/limits?service_id=&project_id=`) or else the registered default
 * (`GET /v3/registered_limits?service_id=`). Results are cached for `cacheMs` per project (the
 * defaults once for all). A Keystone that cannot be reached is an UnavailableError: the bind that
 * needed the limits fails with a 503 rather than going unchecked.
 */
import { UnavailableError } from '../domain/errors.js'
import type { Limits, LimitSource } from '../domain/quota.js'
import { requestJson, type ServiceEndpoint } from './http.js'
import type { ServiceClientSettings } from './service-auth.js'

export interface UnifiedLimitsOptions {
  settings: ServiceClientSettings
  /** `[oslo_limit] endpoint_id`: whose service's limits. */
  endpointId?: string | undefined
  /** `[oslo_limit] endpoint_service_type`, when endpointId is unset. */
  serviceType: string
  /** `[quota] cache_seconds` in ms. */
  cacheMs: number
  /** ms since the epoch. @default Date.now */
  now?: () => number
}

interface Cached<T> {
  value: Promise<T>
  until: number
}

/** Keystone's v3 root: the URL as given when it ends in /v3, else with /v3 added. */
const v3 = (url: string) => {
  const base = url.replace(/\/+$/, '')
  return base.endsWith('/v3') ? base : `${base}/v3`
}

export function createUnifiedLimits(options: UnifiedLimitsOptions): LimitSource {
  const { settings, cacheMs, now = Date.now } = options
  const inner = settings.auth
  const ep: ServiceEndpoint = {
    service: 'Keystone',
    url: v3(settings.endpoint),
    headers: settings.token === undefined ? {} : { 'x-auth-token': settings.token },
    timeoutMs: settings.timeoutMs,
    auth: inner && {
      prepare: async () => {
        const target = await inner.prepare()
        return { ...target, url: v3(target.url) }
      },
      rejected: (headers) => inner.rejected(headers),
    },
  }
  const get = async <T>(path: string) => (await requestJson(ep, 'GET', path)).body as T

  let service: Promise<string> | undefined
  const serviceId = () =>
    (service ??= (async () => {
      if (options.endpointId) {
        const { endpoint } = await get<{ endpoint: { service_id: string } }>(
          `/endpoints/${encodeURIComponent(options.endpointId)}`,
        )
        return endpoint.service_id
      }
      const type = options.serviceType
      const { services } = await get<{ services: { id: string }[] }>(
        `/services?type=${encodeURIComponent(type)}`,
      )
      if (services.length !== 1)
        throw new UnavailableError(
          `Keystone has ${services.length} services of type ${type}; set [oslo_limit] endpoint_id to say whose limits apply`,
          { code: 'QUOTA_UNAVAILABLE' },
        )
      return services[0]!.id
    })().catch((err: unknown) => {
      service = undefined
      throw err
    }))

  /** Caches `load` under `key` for cacheMs; a failed load is not kept. */
  const cache = new Map<string, Cached<Limits>>()
  const cached = (key: string, load: () => Promise<Limits>) => {
    const hit = cache.get(key)
    if (hit && hit.until > now()) return hit.value
    const value = load().catch((err: unknown) => {
      if (cache.get(key)?.value === value) cache.delete(key)
      throw err
    })
    cache.set(key, { value, until: now() + cacheMs })
    return value
  }

  type Row = { resource_name: string }
  const registered = () =>
    cached('', async () => {
      const id = await serviceId()
      const { registered_limits: rows } = await get<{
        registered_limits: (Row & { default_limit: number })[]
      }>(`/registered_limits?service_id=${encodeURIComponent(id)}`)
      return new Map(rows.map((r) => [r.resource_name, r.default_limit]))
    })

  return {
    limitsOf: (projectId) =>
      cached(`p:${projectId}`, async () => {
        const id = await serviceId()
        const [defaults, { limits: rows }] = await Promise.all([
          registered(),
          get<{ limits: (Row & { resource_limit: number })[] }>(
            `/limits?service_id=${encodeURIComponent(id)}&project_id=${encodeURIComponent(projectId)}`,
          ),
        ])
        const limits = new Map(defaults)
        for (const r of rows) limits.set(r.resource_name, r.resource_limit)
        return limits
      }),
  }
}
