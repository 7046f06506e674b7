/**
 * The client side's one way to the API: HTTP with the caller's URL and token. A failure becomes a
 * CliError whose message is one line that says what went wrong and what to do.
 */

export interface ClientOptions {
  /** The API's base URL, without /v1 or /v2. */
  url: string
  /** Sent as X-Auth-Token when given. */
  token?: string
}

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
    const body = JSON.parse(text) as { error_message?: string }
    if (body.error_message) return (JSON.parse(body.error_message) as { faultstring: string }).faultstring
  } catch {
    // not a Cyborg error body
  }
  return text.replace(/\s+/g, ' ').trim().slice(0, 300)
}

/** Sends one request; resolves with the whole answer when it is a 2xx, else throws a CliError. */
export async function apiExchange<T>(options: ClientOptions, method: string, path: string, extra: RequestExtra = {}): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { accept: 'application/json', ...extra.headers }
  if (options.token) headers['x-auth-token'] = options.token
  if (extra.version) headers['openstack-api-version'] = `accelerator ${extra.version}`
  let payload: string | undefined
  if (extra.body !== undefined) {
    headers['content-type'] = 'application/json'
    payload = JSON.stringify(extra.body)
  }
  const url = `${options.url.replace(/\/+$/, '')}${path}`
  let res: Response
  try {
    res = await fetch(url, { method, headers, body: payload, signal: AbortSignal.timeout(120_000) })
  } catch (err) {
    const inner = (err as { cause?: { code?: string; message?: string } }).cause
    const cause = inner?.code ?? inner?.message ?? (err instanceof Error ? err.message : String(err))
    throw new CliError(`cannot reach the Cyborg API at ${options.url} (${cause}); is it running? Set --url or CYBORG_URL`)
  }
  const text = await res.text()
  if (!res.ok) throw new CliError(`${method} ${path}: HTTP ${res.status}: ${reasonOf(text)}`, { status: res.status })
  return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : undefined) as T }
}

/** Sends one request; resolves with the parsed body of a 2xx (undefined when empty). */
export async function apiRequest<T>(options: ClientOptions, method: string, path: string, extra: RequestExtra = {}): Promise<T> {
  return (await apiExchange<T>(options, method, path, extra)).body
}
