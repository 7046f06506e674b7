/**
 * One JSON request to an OpenStack service with the built-in `fetch`: auth header, microversion,
 * timeout, and errors mapped to domain errors that name the service, the call and its answer.
 * The time limit covers the whole exchange, body included, and at most
 * OPENSTACK_ANSWER_LIMIT_BYTES of the answer is read (answer-limit.ts).
 */
import { AppError, UnavailableError } from '../domain/errors.js'
import { exchangeFailure, readAnswerText } from './answer-limit.js'

/** A non-2xx answer other than 5xx: the caller decides (409 conflict, 404 gone, 400 bad input). */
export class OpenStackHttpError extends AppError {
  readonly status: number
  /** The `errors[0].code` of an OpenStack error body, e.g. `placement.concurrent_update`. */
  readonly apiCode: string | undefined
  constructor(message: string, status: number, apiCode: string | undefined) {
    super(message, { code: 'OPENSTACK_REQUEST_FAILED', details: { status, apiCode } })
    this.status = status
    this.apiCode = apiCode
  }
}

/**
 * Auth decided at call time (Keystone tokens, the catalog's endpoint): see keystone-session.ts.
 * A 401 answer hands the headers back through `rejected`, and the request is sent once more.
 */
export interface RequestAuth {
  /** The base URL (no trailing slash) and the auth headers of the next request. */
  prepare(): Promise<{ url: string; headers: Record<string, string> }>
  /** The service answered 401 to a request that carried `headers`: forget the tokens in them. */
  rejected(headers: Record<string, string>): void
}

export interface ServiceEndpoint {
  /** Service name for messages: `Placement`, `Nova`. */
  service: string
  /**
   * Base URL without trailing slash, e.g. http://127.0.0.1:8778. With `auth`, the URL of the last
   * request (until the first one, a description such as `the Keystone catalog's placement endpoint`).
   */
  url: string
  /** Per-request auth and endpoint; without it, `url` and the static `headers` are used as they are. */
  auth?: RequestAuth | undefined
  /** Static headers on every request (X-Auth-Token, OpenStack-API-Version). */
  headers: Record<string, string>
  timeoutMs: number
  /** Counts calls, for tests and benchmarks. */
  /** Told of every request: its status (0 when no answer came) and its time in seconds. */
  onCall?: (method: string, path: string, status: number, seconds: number) => void
}

export interface JsonAnswer {
  status: number
  body: unknown
  /** The response headers (Keystone answers a new token in X-Subject-Token). */
  headers: Headers
}

/**
 * Sends one request. 2xx → the parsed body (or null). 5xx, a timeout or a lost connection →
 * UnavailableError; any other status → OpenStackHttpError with the service's own detail.
 */
export async function requestJson(
  ep: ServiceEndpoint,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<JsonAnswer> {
  const what = `${ep.service} ${method} ${path}`
  const unavailable = (err: unknown) =>
    new UnavailableError(`${what}: ${exchangeFailure(err, ep.timeoutMs)}`, {
      code: 'OPENSTACK_UNAVAILABLE',
      cause: err,
    })
  let res: Response
  for (let attempt = 1; ; attempt++) {
    const target = await resolveTarget(ep)
    const started = performance.now()
    const seconds = () => (performance.now() - started) / 1000
    try {
      // The one signal bounds connect, headers and the body read below.
      res = await fetch(target.url + path, {
        method,
        headers: {
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...target.headers,
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(ep.timeoutMs),
      })
    } catch (err) {
      ep.onCall?.(method, path, 0, seconds())
      throw unavailable(err)
    }
    ep.onCall?.(method, path, res.status, seconds())
    // A Keystone token may be revoked or expire early: take a new one and try once more.
    if (res.status !== 401 || !ep.auth || attempt > 1) break
    await res.body?.cancel()
    ep.auth.rejected(target.headers)
  }
  const text = await readAnswerText(res.body).catch((err: unknown) => {
    throw unavailable(err)
  })
  const parsed = parse(text)
  if (res.ok) return { status: res.status, body: parsed, headers: res.headers }
  const { detail, code } = errorOf(parsed, text)
  const message = `${what} answered ${res.status}: ${detail}`
  if (res.status >= 500) throw new UnavailableError(message, { code: 'OPENSTACK_UNAVAILABLE' })
  throw new OpenStackHttpError(message, res.status, code)
}

/** The base URL and headers of the next request to `ep`: static, or from its `auth` (which updates `ep.url`). */
export async function resolveTarget(
  ep: ServiceEndpoint,
): Promise<{ url: string; headers: Record<string, string> }> {
  if (!ep.auth) return { url: ep.url, headers: ep.headers }
  const { url, headers } = await ep.auth.prepare()
  ep.url = url.replace(/\/+$/, '')
  return { url: ep.url, headers: { ...ep.headers, ...headers } }
}

function parse(text: string): unknown {
  if (text === '') return null
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

/** The first error of an OpenStack error body (`{"errors": [{"detail", "code"}]}`), tidied. */
function errorOf(parsed: unknown, text: string): { detail: string; code: string | undefined } {
  const first = (parsed as { errors?: { detail?: unknown; code?: unknown }[] } | null)?.errors?.[0]
  const raw = typeof first?.detail === 'string' ? first.detail : text.slice(0, 300)
  // Placement prefixes every detail with webob's generic sentence; keep what is specific.
  const detail = raw.split('\n\n').pop()!.trim() || raw.trim()
  return { detail, code: typeof first?.code === 'string' ? first.code : undefined }
}
