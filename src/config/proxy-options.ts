/**
 * Forwarded headers (`X-Forwarded-Proto`, `-Host`, `-Prefix`): honoured only when
 * `[oslo_middleware] enable_proxy_headers_parsing` is on (oslo.middleware's option, off by
 * default), and then only from the peers in `[api] trusted_proxies` (docs/configuration.md).
 * A section of the one option table in schema.ts, kept here for that file's size.
 */
import { isIP } from 'node:net'
import { bool, ExpectedError, list, type Option } from './options.js'

/** Whether `entry` is an IP address or a CIDR network (`10.0.0.0/8`, `fd00::/8`). */
export function isAddressOrNetwork(entry: string): boolean {
  const slash = entry.indexOf('/')
  if (slash < 0) return isIP(entry) !== 0
  const family = isIP(entry.slice(0, slash))
  const bits = entry.slice(slash + 1)
  return family !== 0 && /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128)
}

/** A list of IP addresses and CIDR networks, each checked when the configuration loads. */
function addressList(c: { default: readonly string[]; help: string }): Option<readonly string[]> {
  const base = list(c)
  const expected = 'a comma-separated list of IP addresses or CIDR networks'
  return {
    ...base,
    expected,
    parse: (raw, cwd) => {
      const items = base.parse(raw, cwd)
      const bad = items.find((item) => !isAddressOrNetwork(item))
      if (bad !== undefined)
        throw new ExpectedError(`${expected}; ${JSON.stringify(bad)} is neither`)
      return items
    },
  }
}

export const trustedProxiesOption = addressList({
  default: ['127.0.0.1', '::1'],
  help:
    'Peers (IP addresses or CIDR networks) whose X-Forwarded-Proto, X-Forwarded-Host and ' +
    'X-Forwarded-Prefix build the links and Location headers, when [oslo_middleware] ' +
    'enable_proxy_headers_parsing = true: the reverse proxies in front of the API. Anyone ' +
    "else's are ignored. The default trusts a proxy on the same host.",
})

export const osloMiddlewareOptions = {
  enable_proxy_headers_parsing: bool({
    default: false,
    help:
      'Whether the API believes the X-Forwarded-Proto, X-Forwarded-Host and X-Forwarded-Prefix ' +
      "headers of a request (oslo.middleware's option): only from the peers in [api] " +
      "trusted_proxies. false: links use the request's own Host (or [api] public_endpoint, " +
      'which always wins).',
  }),
}
