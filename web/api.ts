/**
 * The dashboard's calls to the API: same origin, JSON, with the microversion each read needs and
 * the caller's Keystone token, which lives in this module's memory only (never stored, never shown).
 */

let token: string | undefined
const tokenListeners = new Set<() => void>()

/** Keeps `value` as the token every call sends (X-Auth-Token); empty forgets it. */
export function setToken(value: string): void {
  token = value.trim() === '' ? undefined : value.trim()
  for (const listener of tokenListeners) listener()
}

/** Calls `listener` whenever the token changes (a login, a pasted token, a logout); returns its removal. */
export function onTokenChange(listener: () => void): () => void {
  tokenListeners.add(listener)
  return () => void tokenListeners.delete(listener)
}

export function hasToken(): boolean {
  return token !== undefined
}

/** A refused or failed call, with the status and the API's own message. */
export class ApiCallError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
    this.name = 'ApiCallError'
  }
}

/** The headers of every call: what it accepts, the microversion `minor` (2.minor), the token. */
export function apiHeaders(accept: string, minor?: number): Record<string, string> {
  const headers: Record<string, string> = { accept }
  if (minor !== undefined) headers['OpenStack-API-Version'] = `accelerator 2.${minor}`
  if (token !== undefined) headers['X-Auth-Token'] = token
  return headers
}

/** GETs `path` as JSON; `minor` is the v2 microversion (accelerator 2.minor) it needs. */
export async function getJson<T>(path: string, minor?: number): Promise<T> {
  return (await call<T>('GET', path, undefined, minor)) as T
}

/**
 * Sends `body` (JSON; `undefined`: none) with `method` to `path` at microversion 2.`minor`; answers
 * the parsed reply, or `null` when the API answers without a body (as `POST …/disable` does).
 */
export async function sendJson<T>(
  method: 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
  minor?: number,
): Promise<T | null> {
  return call<T>(method, path, body, minor)
}

async function call<T>(
  method: string,
  path: string,
  body: unknown,
  minor?: number,
): Promise<T | null> {
  const headers = apiHeaders('application/json', minor)
  if (body !== undefined) headers['content-type'] = 'application/json'
  const init: RequestInit = { method, headers }
  if (body !== undefined) init.body = JSON.stringify(body)
  const res = await fetch(path, init)
  const text = await res.text()
  const what = method === 'GET' ? path : `${method} ${path}`
  if (!res.ok) throw new ApiCallError(res.status, `${what}: ${res.status} ${messageOf(text)}`)
  return text.trim() === '' ? null : (JSON.parse(text) as T)
}

/** The message of an error body (compat-v2's `error_message.faultstring`, or the text itself). */
export function messageOf(text: string): string {
  try {
    const body = JSON.parse(text) as { error_message?: { faultstring?: string } | string }
    const em = body.error_message
    if (typeof em === 'object' && em?.faultstring) return em.faultstring
    if (typeof em === 'string') return messageOf(em)
  } catch {
    // not JSON
  }
  return text.slice(0, 200)
}
