/**
 * Webhook attempts over HTTP(S): POST the body with its headers, wait at most `timeoutMs` for the
 * status line, and report what came back. Redirects are not followed (a 3xx is a failed attempt,
 * as the convention has it), and the answer's body is read and dropped, never kept.
 *
 * node:http with a keep-alive agent per poster rather than `fetch`: a POST through `fetch` cost the
 * sender about 1.5× the CPU (bench/webhook-dispatch.ts, docs/performance.md), and the dispatcher
 * shares its process with the conductor.
 */
import http from 'node:http'
import https from 'node:https'

/** What an attempt got: a status, or the reason it got none. */
export interface PostResult {
  /** The HTTP status; null when none came (timeout, refused connection, DNS, TLS). */
  status: number | null
  /** Why it failed, for the delivery's `last_error`; null for a 2xx. */
  error: string | null
  /** The dispatcher is stopping: this was not an attempt. */
  aborted?: true
}

export interface WebhookPoster {
  post(url: string, headers: Record<string, string>, body: string): Promise<PostResult>
  /** Aborts the posts in flight (their results say `aborted`) and closes idle connections. */
  close(): void
  /** The time limit of the posts that start from now on (a reloaded `[webhooks] timeout_seconds`). */
  setTimeoutMs(ms: number): void
}

/** The reason a request got no answer, in a few words. */
function reasonOf(err: unknown): string {
  const e = err as NodeJS.ErrnoException
  return `no answer: ${e.code ?? e.message ?? String(err)}`
}

export function createWebhookPoster(initialTimeoutMs: number): WebhookPoster {
  let timeoutMs = initialTimeoutMs
  const agents = {
    'http:': new http.Agent({ keepAlive: true }),
    'https:': new https.Agent({ keepAlive: true }),
  }
  /** Requests in flight, each with what `close` settles it with. */
  const inFlight = new Map<http.ClientRequest, (result: PostResult) => void>()
  let closed = false
  const post = (url: string, headers: Record<string, string>, body: string) =>
    new Promise<PostResult>((resolve) => {
      if (closed) return resolve({ status: null, error: 'stopping', aborted: true })
      let target: URL
      try {
        target = new URL(url)
      } catch {
        return resolve({ status: null, error: 'no answer: invalid URL' })
      }
      const agent = target.protocol === 'https:' ? agents['https:'] : agents['http:']
      const send = target.protocol === 'https:' ? https.request : http.request
      let settled = false
      const settle = (result: PostResult) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        inFlight.delete(req)
        resolve(result)
      }
      const req = send(target, {
        method: 'POST',
        agent,
        headers: { ...headers, 'content-length': Buffer.byteLength(body) },
      })
      inFlight.set(req, settle)
      const limitMs = timeoutMs
      const timer = setTimeout(() => {
        settle({ status: null, error: `no answer within ${limitMs / 1000} s` })
        req.destroy()
      }, limitMs)
      req.on('response', (res) => {
        const status = res.statusCode ?? 0
        res.resume()
        res.on('error', () => undefined)
        settle({ status, error: status >= 200 && status < 300 ? null : `HTTP ${status}` })
      })
      req.on('error', (err) => settle({ status: null, error: reasonOf(err) }))
      req.end(body)
    })
  return {
    post,
    close() {
      closed = true
      for (const [req, settle] of inFlight) {
        settle({ status: null, error: 'stopping', aborted: true })
        req.destroy()
      }
      agents['http:'].destroy()
      agents['https:'].destroy()
    },
    setTimeoutMs(ms: number) {
      timeoutMs = ms
    },
  }
}
