/**
 * The only body parser: JSON. An empty body is no body (POST …/disable may come with a
 * Content-Type and nothing else); malformed JSON is a 400 naming the problem; any other media
 * type is refused by Fastify with 415 (worded in src/api/errors.ts).
 *
 * A request without Content-Length and without Transfer-Encoding has no body (RFC 9112 §6.3), and
 * with Node's `optimizeEmptyRequests` (app.ts) its stream is ended without an 'end' event. Fastify
 * reads a body whenever Content-Type is present, and waited for that 'end' forever (issue 13). So
 * such a request loses its Content-Type before Fastify looks: it is handled as having no body, the
 * same as without the header.
 */
import type { IncomingHttpHeaders } from 'node:http'
import type { FastifyInstance } from 'fastify'
import { InvalidInputError } from '../domain/errors.js'

function rejectProtoKeys(key: string, value: unknown): unknown {
  if (key === '__proto__') {
    throw new InvalidInputError("Invalid input for field '__proto__': not allowed", {
      details: { field: '__proto__' },
    })
  }
  return value
}

/** Parses JSON text; `''` (or only whitespace) gives undefined. */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') return undefined
  try {
    // The reviver costs time, so it runs only when the text could hold a prototype-poisoning key.
    return text.includes('__proto__') ? JSON.parse(text, rejectProtoKeys) : JSON.parse(text)
  } catch (err) {
    if (err instanceof InvalidInputError) throw err
    throw new InvalidInputError(`Malformed JSON in request body: ${(err as Error).message}`, {
      details: { field: 'body' },
    })
  }
}

/** Drops the Content-Type of a request that cannot have a body (see above). */
export function noBodyNoContentType(headers: IncomingHttpHeaders): void {
  if (
    headers['content-type'] !== undefined &&
    headers['content-length'] === undefined &&
    headers['transfer-encoding'] === undefined
  ) {
    delete headers['content-type']
  }
}

/** Replaces Fastify's parsers by {@link parseJsonBody} for application/json. */
export function installBodyParser(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    noBodyNoContentType(request.headers)
    done()
  })
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as string))
    } catch (err) {
      done(err as Error, undefined)
    }
  })
}
