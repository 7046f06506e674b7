/**
 * The base URL of links and version documents: `[api] public_endpoint` when set, otherwise the
 * request's own URL as a trusted proxy describes it (`X-Forwarded-Proto`, `X-Forwarded-Host`,
 * `X-Forwarded-Prefix`) or as the client sent it (`Host`).
 *
 * Forwarded headers are believed only when `[oslo_middleware] enable_proxy_headers_parsing` is on
 * and the peer of the connection is one of `[api] trusted_proxies` (issue 27): from anyone else,
 * `X-Forwarded-Host: attacker.invalid` would land in every `links` href and `Location`. Of a
 * header a chain of proxies appended to, the last value counts: the one the trusted peer wrote.
 */
import { BlockList, isIP } from 'node:net'
import type { FastifyRequest } from 'fastify'

const last = (v: string | string[] | undefined): string | undefined => {
  const s = Array.isArray(v) ? v[v.length - 1] : v
  if (s === undefined) return undefined
  const comma = s.lastIndexOf(',')
  const out = (comma < 0 ? s : s.slice(comma + 1)).trim()
  return out === '' ? undefined : out
}

/** A test of a peer address against IP addresses and CIDR networks (`10.0.0.0/8`, `::1`). */
export function createPeerFilter(
  entries: readonly string[],
): (address: string | undefined) => boolean {
  const list = new BlockList()
  for (const entry of entries) {
    const [address = '', bits] = entry.split('/')
    const type = isIP(address) === 6 ? 'ipv6' : 'ipv4'
    if (bits === undefined) list.addAddress(address, type)
    else list.addSubnet(address, Number(bits), type)
  }
  return (address) => {
    if (address === undefined) return false
    // A dual-stack socket names an IPv4 peer as ::ffff:a.b.c.d.
    const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1]
    if (v4 !== undefined) return list.check(v4, 'ipv4')
    const family = isIP(address)
    return family !== 0 && list.check(address, family === 6 ? 'ipv6' : 'ipv4')
  }
}

/**
 * Returns a function from request to base URL (no trailing slash), e.g. `http://h:6666/accelerator`.
 * `trustedProxies`: the peers whose forwarded headers count; undefined (the default): nobody's.
 */
export function createBaseUrl(
  publicEndpoint: string | undefined,
  trustedProxies?: readonly string[],
): (request: FastifyRequest) => string {
  if (publicEndpoint !== undefined && publicEndpoint !== '') {
    const fixed = publicEndpoint.replace(/\/+$/, '')
    return () => fixed
  }
  const trusted = trustedProxies === undefined ? () => false : createPeerFilter(trustedProxies)
  return (request) => {
    const h = request.headers
    const host = h.host ?? 'localhost'
    if (!trusted(request.socket?.remoteAddress)) return `${request.protocol}://${host}`
    const proto = last(h['x-forwarded-proto']) ?? request.protocol
    let prefix = last(h['x-forwarded-prefix']) ?? ''
    if (prefix !== '') prefix = `/${prefix.replace(/^\/+|\/+$/g, '')}`.replace(/^\/$/, '')
    return `${proto}://${last(h['x-forwarded-host']) ?? host}${prefix}`
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
