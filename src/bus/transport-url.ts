/**
 * oslo.messaging's transport URL, `rabbit://[user[:pass]@]host[:port][,[user[:pass]@]host2[:port]…]/[vhost]`,
 * as the list of brokers to try in order. src/config checks the form when it loads; this does the
 * real parsing (percent-decoding, port range, vhost) when the bus connects.
 */
import { InvalidInputError } from '../domain/errors.js'

/** One broker of a transport URL. */
export interface BrokerAddress {
  hostname: string
  /** @default 5672 */
  port: number
  /** Absent when the URL names no user: the broker's default (guest/guest) applies. */
  username?: string
  password?: string
  /** The decoded virtual host: `rabbit://h/` and `rabbit://h` both mean `/`. */
  vhost: string
}

const DEFAULT_PORT = 5672

/**
 * Parses a `rabbit://` URL. Query parameters (`?ssl=1`, …) are refused rather than ignored, so
 * that nobody believes they got TLS.
 * @throws InvalidInputError (code `TRANSPORT_URL_INVALID`, `details.reason`) whose message never contains the password
 */
export function parseTransportUrl(url: string): BrokerAddress[] {
  const bad = (why: string) =>
    new InvalidInputError(`${redactTransportUrl(url)}: ${why}`, {
      code: 'TRANSPORT_URL_INVALID',
      details: { reason: why },
    })
  const m = /^rabbit:\/\/(.*)$/is.exec(url.trim())
  if (!m) throw bad('expected rabbit://user:pass@host:port/vhost')
  let body = m[1] ?? ''
  if (body.includes('?') || body.includes('#'))
    throw bad('query parameters (ssl, heartbeat, …) are not supported')
  const slash = body.indexOf('/', body.lastIndexOf('@') + 1)
  let vhost = '/'
  if (slash >= 0) {
    const path = body.slice(slash + 1)
    body = body.slice(0, slash)
    if (path !== '')
      vhost = decode(path, () => bad('the virtual host is not validly percent-encoded'))
  }
  if (body === '') throw bad('no host')
  return body.split(',').map((part) => {
    const at = part.lastIndexOf('@')
    const userinfo = at >= 0 ? part.slice(0, at) : undefined
    const hostport = at >= 0 ? part.slice(at + 1) : part
    const hp = /^([^:@/]+)(?::(\d{1,5}))?$/.exec(hostport)
    if (!hp?.[1]) throw bad(`"${hostport}" is not host[:port]`)
    const port = hp[2] === undefined ? DEFAULT_PORT : Number(hp[2])
    if (port < 1 || port > 65535) throw bad(`port ${port} is not 1-65535`)
    const broker: BrokerAddress = { hostname: hp[1], port, vhost }
    if (userinfo !== undefined) {
      const colon = userinfo.indexOf(':')
      const user = colon >= 0 ? userinfo.slice(0, colon) : userinfo
      broker.username = decode(user, () => bad('the user name is not validly percent-encoded'))
      broker.password =
        colon >= 0
          ? decode(userinfo.slice(colon + 1), () =>
              bad('the password is not validly percent-encoded'),
            )
          : ''
    }
    return broker
  })
}

/** `rabbit://guest:***@mq:5672/cyborg`: what logs and errors show of one broker. */
export function describeBroker(broker: BrokerAddress): string {
  const user =
    broker.username === undefined
      ? ''
      : `${encodeURIComponent(broker.username)}${broker.password === '' ? '' : ':***'}@`
  const vhost = broker.vhost === '/' ? '' : encodeURIComponent(broker.vhost)
  return `rabbit://${user}${broker.hostname}:${broker.port}/${vhost}`
}

/** Replaces every password of a (possibly multi-host) transport URL with `***`. */
export function redactTransportUrl(url: string): string {
  return url.replace(/([/,][^:/@,]*:)[^@]*@/g, '$1***@')
}

function decode(text: string, fail: () => Error): string {
  try {
    return decodeURIComponent(text)
  } catch {
    throw fail()
  }
}
