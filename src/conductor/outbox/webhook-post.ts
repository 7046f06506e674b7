/**
 * Webhook attempts over HTTP(S): POST the body with its headers and report what came back.
 * Redirects are not followed (a 3xx is a failed attempt, as the convention has it). The status
 * line decides the outcome, but the attempt lasts until the whole exchange is over, and
 * `timeoutMs` bounds all of it: connect, status line and body. The answer's body is read and
 * dropped up to WEBHOOK_ANSWER_LIMIT_BYTES; a longer one is cut there and its connection closed
 * (the status stands); one that does not end in time fails the attempt (docs/webhooks.md, Limits).
 *
 * node:http with a keep-alive agent per poster rather than `fetch`: a POST through `fetch` cost the
 * sender about 1.5× the CPU (bench/webhook-dispatch.ts, docs/performance.md), and the dispatcher
 * shares its process with the conductor.
 */
import http from 'node:http'
import https from 'node:https'
import {
  AnswerTooLargeError,
  readAnswer,
  sizeText,
  WEBHOOK_ANSWER_LIMIT_BYTES,
} from '../../openstack/answer-limit.js'

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
  return `no answer: ${codeOf(err)}`
}

const codeOf = (err: unknown) => {
  const e = err as NodeJS.ErrnoException
  return e.code ?? e.message ?? String(err)
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
      /** The status line's status, once it came. */
      let status: number | null = null
      const timer = setTimeout(() => {
        const late = `did not end within ${limitMs / 1000} s`
        settle({
          status,
          error:
            status === null
              ? `no answer within ${limitMs / 1000} s`
              : `HTTP ${status}, but the answer ${late}`,
        })
        req.destroy()
      }, limitMs)
      req.on('response', (res) => {
        const got = res.statusCode ?? 0
        status = got
        const verdict = got >= 200 && got < 300 ? null : `HTTP ${got}`
        readAnswer(res, WEBHOOK_ANSWER_LIMIT_BYTES).then(
          () => settle({ status: got, error: verdict }),
          (err: unknown) => {
            req.destroy()
            if (err instanceof AnswerTooLargeError) {
              const cut = `answer cut at ${sizeText(WEBHOOK_ANSWER_LIMIT_BYTES)}`
              settle({ status: got, error: verdict === null ? null : `${verdict} (${cut})` })
            } else
              settle({
                status: got,
                error: `HTTP ${got}, but the answer broke off: ${codeOf(err)}`,
              })
          },
        )
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
