/**
 * The client side's one way to the API: HTTP with the caller's URL and token. A failure becomes a
 * CliError whose message is one line that says what went wrong and what to do.
 *
 * It uses node:http(s), not fetch: fetch refuses the "bad ports" of the Fetch standard, and
 * 6665-6669 are among them, so it cannot reach Cyborg's own default port, 6666.
 */
import { readFileSync } from 'node:fs'
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { errorMessage } from '../domain/error-message.js'

export interface ClientOptions {
  /** The API's base URL, without /v1 or /v2. */
  url: string
  /** Sent as X-Auth-Token when given. */
  token?: string
  /** `--os-cacert`: a PEM file of CA certificates trusted for an https URL (instead of the system's). */
  osCacert?: string
  /** `--timeout`: seconds one call may take, connecting and reading included. @default 30 */
  timeout?: number
}

/** `value` cut to `max` characters, with `…` when it was longer (client.ts imports this file). */
export const cutValue = (value: string, max = 64): string =>
  value.length > max ? `${value.slice(0, max)}…` : value

/** `url` with the password of its userinfo masked, for messages. */
export const maskUrl = (url: string): string =>
  url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*:)[^@]*@/i, '$1***@')

/** What `send` rejects with when the call outlives `--timeout`. */
const TIMED_OUT = 'CYBORG_CLIENT_TIMEOUT'

export class CliError extends Error {
  override name = 'CliError'
  /** The HTTP status when the API answered with an error, so that a command can explain a 409. */
  readonly status: number | undefined

  constructor(message: string, options: { status?: number } = {}) {
    super(message)
    this.status = options.status
  }
}

/** What a request may add to the method and path. */
export interface RequestExtra {
  /** The v2 microversion, sent as `OpenStack-API-Version: accelerator <version>`. */
  version?: string
  /** Sent as JSON. */
  body?: unknown
  /** More request headers, e.g. `if-match`. */
  headers?: Record<string, string>
}

/** A successful answer: the status, the headers (Location, ETag) and the parsed body. */
export interface ApiResponse<T> {
  status: number
  headers: Headers
  body: T
}

/** The faultstring of a Cyborg error body, else the body itself, cut to one line. */
function reasonOf(text: string): string {
  try {
    // error_message is an object (OpenStack Cyborg 17.0.0, and us) or its JSON text (≤ 16.x).
    const { error_message: inner } = JSON.parse(text) as { error_message?: unknown }
    const fault = (typeof inner === 'string' ? JSON.parse(inner) : inner) as {
      faultstring?: unknown
    } | null
    if (typeof fault?.faultstring === 'string') return fault.faultstring
  } catch {
    // not a Cyborg error body
  }
  return text.replace(/\s+/g, ' ').trim().slice(0, 300)
}

/** Sends one request; resolves with the whole answer when it is a 2xx, else throws a CliError. */
export async function apiExchange<T>(
  options: ClientOptions,
  method: string,
  path: string,
  extra: RequestExtra = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { accept: 'application/json', ...extra.headers }
  if (options.token) headers['x-auth-token'] = options.token
  if (extra.version) headers['openstack-api-version'] = `accelerator ${extra.version}`
  let payload: string | undefined
  if (extra.body !== undefined) {
    headers['content-type'] = 'application/json'
    payload = JSON.stringify(extra.body)
  }
  let url: URL
  try {
    url = new URL(`${options.url.replace(/\/+$/, '')}${path}`)
  } catch {
    throw new CliError(
      `the API URL ${JSON.stringify(cutValue(maskUrl(options.url)))} is not a URL; set --url or CYBORG_URL to e.g. http://127.0.0.1:6666`,
    )
  }
  const ca =
    url.protocol === 'https:' && options.osCacert !== undefined
      ? readCa(options.osCacert)
      : undefined
  let res: { status: number; headers: IncomingHttpHeaders; text: string }
  try {
    res = await send(url, method, headers, payload, ca, (options.timeout ?? 30) * 1000)
  } catch (err) {
    const cause = (err as { code?: string }).code ?? errorMessage(err)
    throw new CliError(unreachable(options, cause))
  }
  if (res.status < 200 || res.status > 299)
    throw new CliError(`${method} ${path}: HTTP ${res.status}: ${reasonOf(res.text)}`, {
      status: res.status,
    })
  const answered = new Headers()
  for (const [name, value] of Object.entries(res.headers))
    if (value !== undefined) answered.set(name, Array.isArray(value) ? value.join(', ') : value)
  return {
    status: res.status,
    headers: answered,
    body: (res.text ? JSON.parse(res.text) : undefined) as T,
  }
}

/** TLS failures that mean the server's certificate is not one this client trusts. */
const UNTRUSTED = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
])

/** What to say when no answer came: the cause and what to do about it. */
function unreachable(options: ClientOptions, cause: string): string {
  const at = `the Cyborg API at ${cutValue(maskUrl(options.url), 128)}`
  if (cause === TIMED_OUT)
    return `${at} did not answer within ${options.timeout ?? 30} s (--timeout or CYBORG_TIMEOUT); is it overloaded or stuck? Raise --timeout to wait longer`
  if (UNTRUSTED.has(cause)) {
    const given = options.osCacert === undefined ? '' : ` ${options.osCacert} did not sign it;`
    return `the certificate of ${at} is not trusted (${cause});${given} pass the CA certificate that signed it with --os-cacert FILE or OS_CACERT`
  }
  if (cause === 'ERR_TLS_CERT_ALTNAME_INVALID')
    return `the certificate of ${at} is not for that host name (${cause}); use the name or address it was issued for in --url`
  if (cause === 'CERT_HAS_EXPIRED' || cause === 'CERT_NOT_YET_VALID')
    return `the certificate of ${at} is not valid now (${cause}); the API's operator must renew it`
  if (cause === 'EPROTO' || cause === 'ERR_SSL_WRONG_VERSION_NUMBER')
    return `cannot speak TLS with ${at} (${cause}); does it serve plain HTTP? Then use an http:// --url`
  if (cause === 'ECONNRESET' && options.url.startsWith('http:'))
    return `${at} dropped the connection (${cause}); if it serves HTTPS ([api] enable_ssl_api), use an https:// --url`
  return `cannot reach ${at} (${cause}); is it running? Set --url or CYBORG_URL`
}

/** The `--os-cacert` file's certificates; unreadable is a one-line CliError naming it. */
function readCa(file: string): Buffer {
  try {
    return readFileSync(file)
  } catch (err) {
    throw new CliError(
      `cannot read the CA certificate file ${file} (--os-cacert or OS_CACERT): ${(err as { code?: string }).code ?? String(err)}`,
    )
  }
}

/**
 * One HTTP exchange, ended after `timeoutMs` in all (connecting, sending, the whole answer); `ca`
 * replaces the trusted CAs of an https one.
 */
function send(
  url: URL,
  method: string,
  headers: Record<string, string>,
  payload: string | undefined,
  ca: Buffer | undefined,
  timeoutMs: number,
) {
  return new Promise<{ status: number; headers: IncomingHttpHeaders; text: string }>(
    (resolve, reject) => {
      const request = url.protocol === 'https:' ? httpsRequest : httpRequest
      const sent =
        payload === undefined
          ? headers
          : { ...headers, 'content-length': String(Buffer.byteLength(payload)) }
      const req = request(
        url,
        { method, headers: sent, ...(ca === undefined ? {} : { ca }) },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.on('end', () => {
            clearTimeout(timer)
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              text: Buffer.concat(chunks).toString('utf8'),
            })
          })
          res.on('error', reject)
        },
      )
      const timer = setTimeout(
        () => req.destroy(Object.assign(new Error('no answer in time'), { code: TIMED_OUT })),
        timeoutMs,
      )
      req.on('error', (err) => {
        clearTimeout(timer)
        reject(err)
      })
      req.end(payload)
    },
  )
}

/** Sends one request; resolves with the parsed body of a 2xx (undefined when empty). */
export async function apiRequest<T>(
  options: ClientOptions,
  method: string,
  path: string,
  extra: RequestExtra = {},
): Promise<T> {
  return (await apiExchange<T>(options, method, path, extra)).body
}
