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

export async function apiRequest<T>(options: ClientOptions, method: string, path: string, extra: { version?: string } = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' }
  if (options.token) headers['x-auth-token'] = options.token
  if (extra.version) headers['openstack-api-version'] = `accelerator ${extra.version}`
  const url = `${options.url.replace(/\/+$/, '')}${path}`
  let res: Response
  try {
    res = await fetch(url, { method, headers, signal: AbortSignal.timeout(120_000) })
  } catch (err) {
    const inner = (err as { cause?: { code?: string; message?: string } }).cause
    const cause = inner?.code ?? inner?.message ?? (err instanceof Error ? err.message : String(err))
    throw new CliError(`cannot reach the Cyborg API at ${options.url} (${cause}); is it running? Set --url or CYBORG_URL`)
  }
  const text = await res.text()
  if (!res.ok) throw new CliError(`${method} ${path}: HTTP ${res.status}: ${reasonOf(text)}`)
  return (text ? JSON.parse(text) : undefined) as T
}
