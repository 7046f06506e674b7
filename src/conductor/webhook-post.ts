/**
 * One webhook attempt over HTTP: POST the body with its headers, wait at most `timeoutMs` for the
 * status line, and report what came back. Redirects are not followed (a 3xx is a failed attempt,
 * as the convention has it), and the answer's body is not read.
 */

/** What an attempt got: a status, or the reason it got none. */
export interface PostResult {
  /** The HTTP status; null when none came (timeout, refused connection, DNS, TLS). */
  status: number | null
  /** Why it failed, for the delivery's `last_error`; null for a 2xx. */
  error: string | null
  /** The dispatcher is stopping: this was not an attempt. */
  aborted?: true
}

/** The reason a request got no answer, in a few words. */
function reasonOf(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && err.name === 'TimeoutError')
    return `no answer within ${timeoutMs / 1000} s`
  const cause = err instanceof Error ? (err.cause as { code?: string; message?: string }) : null
  const text = cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err))
  return `no answer: ${text}`
}

export async function postWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
  halt: AbortSignal,
): Promise<PostResult> {
  const signal = AbortSignal.any([halt, AbortSignal.timeout(timeoutMs)])
  try {
    const res = await fetch(url, { method: 'POST', headers, body, redirect: 'manual', signal })
    await res.body?.cancel().catch(() => undefined)
    const ok = res.status >= 200 && res.status < 300
    return { status: res.status, error: ok ? null : `HTTP ${res.status}` }
  } catch (err) {
    if (halt.aborted) return { status: null, error: 'stopping', aborted: true }
    return { status: null, error: reasonOf(err, timeoutMs) }
  }
}
