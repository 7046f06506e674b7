/**
 * The bounds of every outbound HTTP exchange (docs/auth-outbound.md, Limits): each call to
 * Placement, Nova, Glance, Barbican and Keystone, and each webhook attempt
 * (src/conductor/outbox/webhook-post.ts), reads its answer's body through `readAnswer`, which stops at a
 * byte limit and closes the connection, while the caller's one time limit (an AbortSignal, or a
 * timer that destroys the request) covers connect, headers and body together. Glance's image
 * download streams instead, bounded by the image's declared size and its own times (glance.ts).
 */
import { causeMessage } from '../domain/error-message.js'

/** The most bytes of an OpenStack service's answer read (JSON, a Barbican payload). */
export const OPENSTACK_ANSWER_LIMIT_BYTES = 8 * 1024 * 1024
/** The most bytes of a webhook receiver's answer read (and dropped). */
export const WEBHOOK_ANSWER_LIMIT_BYTES = 64 * 1024

/** An answer's body went past its limit: the rest was not read, and the connection was closed. */
export class AnswerTooLargeError extends Error {
  readonly limitBytes: number
  constructor(limitBytes: number) {
    super(`the answer is larger than ${sizeText(limitBytes)}: the rest was not read`)
    this.name = 'AnswerTooLargeError'
    this.limitBytes = limitBytes
  }
}

/** `8 MiB`, `64 KiB`, `1000 bytes`. */
export function sizeText(bytes: number): string {
  if (bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`
  if (bytes % 1024 === 0) return `${bytes / 1024} KiB`
  return `${bytes} bytes`
}

/**
 * The whole body of an answer (a fetch body or a node:http response), at most `limitBytes`.
 * Past the limit it stops reading, which cancels the body (fetch) or destroys the response
 * (node:http): either closes the connection. @throws AnswerTooLargeError
 */
export async function readAnswer(
  body: AsyncIterable<Uint8Array> | null | undefined,
  limitBytes: number,
): Promise<Buffer> {
  if (!body) return Buffer.alloc(0)
  const chunks: Buffer[] = []
  let length = 0
  // Leaving the loop by a throw calls the iterator's return(): the cancel or destroy above.
  for await (const chunk of body) {
    length += chunk.byteLength
    if (length > limitBytes) throw new AnswerTooLargeError(limitBytes)
    chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength))
  }
  return Buffer.concat(chunks, length)
}

/** The answer's body as text (UTF-8, a BOM dropped as `Response.text()` does), at most `limitBytes`. */
export async function readAnswerText(
  body: AsyncIterable<Uint8Array> | null | undefined,
  limitBytes = OPENSTACK_ANSWER_LIMIT_BYTES,
): Promise<string> {
  return new TextDecoder().decode(await readAnswer(body, limitBytes))
}

/** Why a fetch exchange with time limit `timeoutMs` failed, in a few words for an error message. */
export function exchangeFailure(err: unknown, timeoutMs: number): string {
  if (err instanceof AnswerTooLargeError) return `${err.message}, and the connection was closed`
  if (err instanceof Error && err.name === 'TimeoutError')
    return `no complete answer within ${timeoutMs} ms`
  return causeMessage(err)
}
