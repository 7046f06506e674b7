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
 *
 * A body nested deeper than {@link MAX_JSON_DEPTH} arrays and objects is refused before it is
 * parsed (issue 27): code that walks a body recursively (schemas, canonical JSON) would otherwise
 * overflow the stack on 10,000 levels that fit in 60 KB. No request of the API needs more than a
 * handful of levels (docs/api-v2.md).
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

/** The deepest nesting of arrays and objects a JSON body may have (`{}` is 1 level). */
export const MAX_JSON_DEPTH = 32

const OPEN_BRACE = 0x7b
const OPEN_BRACKET = 0x5b
const CLOSE_BRACE = 0x7d
const CLOSE_BRACKET = 0x5d
const QUOTE = 0x22
const BACKSLASH = 0x5c

/**
 * Throws when `text` opens more than `max` arrays or objects inside one another, counting only
 * brackets outside strings. One pass, no recursion; malformed text is left to JSON.parse.
 */
export function checkJsonDepth(text: string, max = MAX_JSON_DEPTH): void {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === BACKSLASH) i++
      else if (c === QUOTE) inString = false
    } else if (c === QUOTE) {
      inString = true
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max)
        throw new InvalidInputError(
          `Invalid input for field 'body': JSON nested deeper than ${max} levels of arrays and objects`,
          { code: 'BODY_TOO_DEEP', details: { field: 'body', max_depth: max } },
        )
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--
    }
  }
}

/** Parses JSON text; `''` (or only whitespace) gives undefined. Nested deeper than {@link MAX_JSON_DEPTH}: 400. */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') return undefined
  checkJsonDepth(text)
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
