/**
 * One JSON request to an OpenStack service with the built-in `fetch`: auth header, microversion,
 * timeout, and errors mapped to domain errors that name the service, the call and its answer.
 */
import { AppError, ConfigError, UnavailableError } from '../domain/errors.js'

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

export interface ServiceEndpoint {
  /** Service name for messages: `Placement`, `Nova`. */
  service: string
  /** Base URL without trailing slash, e.g. http://127.0.0.1:8778. */
  url: string
  /** Static headers on every request (X-Auth-Token, OpenStack-API-Version). */
  headers: Record<string, string>
  timeoutMs: number
  /** Counts calls, for tests and benchmarks. */
  onCall?: (method: string, path: string, status: number) => void
}

export interface JsonAnswer {
  status: number
  body: unknown
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
  let res: Response
  try {
    res = await fetch(ep.url + path, {
      method,
      headers: {
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...ep.headers,
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(ep.timeoutMs),
    })
  } catch (err) {
    ep.onCall?.(method, path, 0)
    const reason = err instanceof Error && err.name === 'TimeoutError' ? `no answer in ${ep.timeoutMs} ms` : errText(err)
    throw new UnavailableError(`${what}: ${reason}`, { code: 'OPENSTACK_UNAVAILABLE', cause: err })
  }
  ep.onCall?.(method, path, res.status)
  const text = await res.text()
  const parsed = parse(text)
  if (res.ok) return { status: res.status, body: parsed }
  const { detail, code } = errorOf(parsed, text)
  const message = `${what} answered ${res.status}: ${detail}`
  if (res.status >= 500) throw new UnavailableError(message, { code: 'OPENSTACK_UNAVAILABLE' })
  throw new OpenStackHttpError(message, res.status, code)
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

const errText = (err: unknown) => {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause
  return cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err))
}

/**
 * Client settings from a keystoneauth-style section (`[placement]`, `[glance]`), or null when it
 * names no endpoint: the service is not used. @throws ConfigError naming the option for what this
 * release cannot do yet.
 */
export function keystoneSettings(
  section: string,
  opts: { auth_type: 'none' | 'admin_token' | 'password'; endpoint_override?: string | undefined; token?: string | undefined; timeout: number },
): { endpoint: string; token: string | undefined; timeoutMs: number } | null {
  if (!opts.endpoint_override) {
    if (opts.auth_type === 'none') return null
    throw new ConfigError(
      `[${section}] endpoint_override is required: the Keystone catalog lookup for auth_type = ${opts.auth_type} is not supported yet`,
    )
  }
  if (opts.auth_type === 'password') {
    throw new ConfigError(`[${section}] auth_type = password is not supported yet; use admin_token or none`)
  }
  if (opts.auth_type === 'admin_token' && !opts.token) {
    throw new ConfigError(`[${section}] token is required when auth_type = admin_token`)
  }
  return {
    endpoint: opts.endpoint_override,
    token: opts.auth_type === 'admin_token' ? opts.token : undefined,
    timeoutMs: opts.timeout * 1000,
  }
}
