/**
 * The handler deadline (`[api] handler_timeout`): a request that has no answer this long after it
 * was routed, hooks and body included, is answered 503 and logged with its route. Its work goes on
 * (a write the conductor already has may still land), so the answer says to check before retrying.
 *
 * Not Fastify's own `handlerTimeout`: it stops its timer on the request's 'close' event, which Node
 * emits as soon as the body has been read, so over a real socket it never fired for a request with
 * a body (issue 13; `inject` does not show it).
 */
import type { ServerResponse } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { errorBody, errorShapeFor } from './errors.js'

/** The deadline timer of a response, kept on it so that one shared listener can clear it. */
const TIMER = Symbol('handler deadline')
type Timed = ServerResponse & { [TIMER]?: NodeJS.Timeout }

/** 'close' comes once, when the response is finished or the connection is gone, whichever is first. */
function clearDeadline(this: Timed): void {
  clearTimeout(this[TIMER])
}

export function installHandlerDeadline(app: FastifyInstance, ms: number): void {
  app.addHook('onRequest', (request, reply, done) => {
    // No closure per request: the hot path is a timer and one shared listener.
    const raw = reply.raw as Timed
    raw[TIMER] = setTimeout(expire, ms, request, reply, ms)
    raw.on('close', clearDeadline)
    done()
  })
}

function expire(request: FastifyRequest, reply: FastifyReply, ms: number): void {
  if (reply.sent || reply.raw.headersSent) return
  const seconds = ms / 1000
  request.log.warn(
    { status: 503, method: request.method, route: request.routeOptions.url },
    `request not finished within ${seconds} s`,
  )
  const body = errorBody(
    503,
    `The request was not finished within ${seconds} s ([api] handler_timeout); its work may still complete, so check the resource before retrying`,
    errorShapeFor(request.headers),
  )
  // Hijacked, so that the handler's late answer (or error) is dropped instead of sent twice.
  reply.hijack()
  for (const [name, value] of Object.entries(reply.getHeaders()))
    if (value !== undefined) reply.raw.setHeader(name, value)
  reply.raw.writeHead(503, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  })
  reply.raw.end(body)
}
