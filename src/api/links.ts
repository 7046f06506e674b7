/**
 * The base URL of links and version documents: `[api] public_endpoint` when set, otherwise the
 * request's own URL as a proxy describes it (`X-Forwarded-Proto`, `X-Forwarded-Host`,
 * `X-Forwarded-Prefix`) or as the client sent it (`Host`).
 */
import type { FastifyRequest } from 'fastify'

const first = (v: string | string[] | undefined): string | undefined => {
  const s = Array.isArray(v) ? v[0] : v
  if (s === undefined) return undefined
  const comma = s.indexOf(',')
  const out = (comma < 0 ? s : s.slice(0, comma)).trim()
  return out === '' ? undefined : out
}

/** Returns a function from request to base URL (no trailing slash), e.g. `http://h:6666/accelerator`. */
export function createBaseUrl(
  publicEndpoint: string | undefined,
): (request: FastifyRequest) => string {
  if (publicEndpoint !== undefined && publicEndpoint !== '') {
    const fixed = publicEndpoint.replace(/\/+$/, '')
    return () => fixed
  }
  return (request) => {
    const h = request.headers
    const proto = first(h['x-forwarded-proto']) ?? request.protocol
    const host = first(h['x-forwarded-host']) ?? h.host ?? 'localhost'
    let prefix = first(h['x-forwarded-prefix']) ?? ''
    if (prefix !== '') prefix = `/${prefix.replace(/^\/+|\/+$/g, '')}`.replace(/^\/$/, '')
    return `${proto}://${host}${prefix}`
  }
}

/** A `{href, rel}` link object. */
export interface Link {
  href: string
  rel: string
}

/** The self link of `<base>/v2/<collection>/<uuid>`. */
export function selfLink(base: string, collection: string, uuid: string): Link {
  return { href: `${base}/v2/${collection}/${uuid}`, rel: 'self' }
}
