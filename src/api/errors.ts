/**
 * The one error → HTTP map, and the error body of OpenStack Cyborg 17.0.0:
 * `{"error_message": {faultcode, faultstring, debuginfo}}`, or for the one client that still
 * parses it as JSON text (python-cyborgclient's own HTTP client) the ≤ 16.x form
 * `{"error_message": "<JSON string of the same>"}` (docs/compat-2026-2.md).
 * Domain errors carry no status; API-only conditions (405, 406) use {@link ApiError}.
 */
import type { IncomingHttpHeaders } from 'node:http'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import {
  AppError,
  ConflictError,
  ForbiddenError,
  InvalidInputError,
  InvalidStateError,
  NotAuthenticatedError,
  NotFoundError,
  TimeoutError,
  UnavailableError,
} from '../domain/errors.js'
import {
  MIN_MINOR,
  negotiateMicroversion,
  VERSION_HEADER,
  VERSION_RESPONSE_HEADERS,
} from './microversion.js'
import { databaseUnavailable } from './database-errors.js'
import { formatValidationError, type AjvError } from './validation-errors.js'

export { formatValidationError } from './validation-errors.js'

/** An HTTP-only failure such as 405 or 406; the message is shown to the client. */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message)
    this.name = 'ApiError'
  }
}

/** The HTTP status of a domain error; anything unknown is a 500 (a bug). */
export function statusOf(err: unknown): number {
  if (err instanceof ApiError) return err.statusCode
  if (err instanceof NotFoundError) return 404
  if (err instanceof ForbiddenError) return 403
  if (err instanceof NotAuthenticatedError) return 401
  if (err instanceof InvalidInputError) return 400
  if (err instanceof ConflictError || err instanceof InvalidStateError) return 409
  if (err instanceof UnavailableError || err instanceof TimeoutError) return 503
  if (err instanceof AppError) return 500
  const fst = err as Partial<FastifyError> | null
  // Fastify's own client errors: bad JSON framing, body too large, unsupported media type, …
  if (
    typeof fst?.code === 'string' &&
    fst.code.startsWith('FST_') &&
    typeof fst.statusCode === 'number'
  ) {
    if (fst.statusCode >= 400 && fst.statusCode < 500) return fst.statusCode
  }
  return 500
}

/**
 * `object`: OpenStack Cyborg 17.0.0's `error_message` (fix-double-encoded-error-responses), at
 * every microversion as upstream; `string`: the JSON text of the same object, as Cyborg ≤ 16.x sent.
 */
export type ErrorShape = 'object' | 'string'

/**
 * python-cyborgclient's HTTPClient and SessionClient (cyborgclient/common/httpclient.py, 2.0.0)
 * send this User-Agent and `json.loads` the `error_message` (a TypeError on an object): the one
 * client we serve that needs the string. openstacksdk (the `openstack accelerator` CLI) and Nova
 * read both shapes.
 */
const STRING_CLIENT = /^python-cyborgclient(?:[\s/]|$)/

/** The `error_message` shape a request's client reads. */
export function errorShapeFor(headers: IncomingHttpHeaders): ErrorShape {
  const agent = headers['user-agent']
  return typeof agent === 'string' && STRING_CLIENT.test(agent) ? 'string' : 'object'
}

/** The compat-v2 error body, in `shape` (the 17.0.0 object unless told). */
export function errorBody(status: number, message: string, shape: ErrorShape = 'object'): string {
  const fault = {
    faultcode: status < 500 ? 'Client' : 'Server',
    faultstring: message,
    debuginfo: null,
  }
  return JSON.stringify({ error_message: shape === 'string' ? JSON.stringify(fault) : fault })
}

function clientMessage(err: unknown, status: number, request: FastifyRequest): string {
  const fst = err as FastifyError & { validation?: AjvError[]; validationContext?: string }
  if (Array.isArray(fst.validation)) {
    const context = fst.validationContext ?? 'body'
    // An empty body (with or without Content-Type) is no body: say so rather than "must be object".
    if (context === 'body' && request.body === undefined)
      return "Invalid input for field 'body': required, and the request has none"
    const data = context === 'querystring' ? request.query : (request as never)[context]
    const schema = (request.routeOptions.schema as Record<string, unknown> | undefined)?.[context]
    try {
      return formatValidationError(fst.validation, context, { schema, data })
    } catch {
      return formatValidationError(fst.validation, context) // the wording never fails the answer
    }
  }
  switch (fst.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': {
      const ct = request.headers['content-type']
      return ct === undefined
        ? 'A request body needs the header Content-Type: application/json'
        : `Content-Type ${JSON.stringify(ct)} is not supported: send the body as application/json`
    }
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return `The request body is larger than the limit of ${request.routeOptions.bodyLimit} bytes`
    default:
      return status === 500 ? 'Internal error' : fst.message
  }
}

/**
 * The conductor and the domain word some refusals their own way, `<field>: <problem>`
 * (src/rpc/payload-check.ts) or `<field> must …` (src/domain/device-config.ts); an answer of the
 * API says `Invalid input for field '<field>': …` like every other 400, so that a client finds the
 * field the same way everywhere (issue 27: a v1 name over 255 characters came back as `name: …`).
 * A message that already quotes its field is kept.
 */
function houseWording(err: AppError): string {
  const field = err.details?.field
  if (!(err instanceof InvalidInputError) || typeof field !== 'string' || field === '')
    return err.message
  if (err.message.includes(`'${field}'`)) return err.message
  const problem = err.message.startsWith(`${field}: `)
    ? err.message.slice(field.length + 2)
    : err.message.startsWith(`${field} `)
      ? err.message.slice(field.length + 1)
      : err.message
  return `Invalid input for field '${field}': ${problem}`
}

/** Sends the compat-v2 error body with `status`, in the shape the request's client reads. */
export function sendError(reply: FastifyReply, status: number, message: string): FastifyReply {
  const body = errorBody(status, message, errorShapeFor(reply.request.headers))
  return reply.code(status).type('application/json').send(body)
}

/** Installs the error handler (the map above) and the 404 handler on the root instance. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((thrown, request, reply) => {
    if ((thrown as { code?: unknown }).code === 'ECONNRESET' && request.raw.destroyed) {
      // The client (or request_timeout) closed the connection while the body was coming: nobody to answer.
      request.log.info(
        { status: 400 },
        'the connection closed before the request body was complete',
      )
      return sendError(reply, 400, 'The connection closed before the request body was complete')
    }
    const err = databaseUnavailable(thrown) ?? thrown
    const status = statusOf(err)
    if (status >= 500) {
      request.log.error({ err: thrown, status }, 'request failed')
      const message =
        status === 500
          ? `Internal error; the server log has the details (request ${request.id})`
          : (err as Error).message
      return sendError(reply, status, message)
    }
    const message =
      err instanceof AppError
        ? houseWording(err)
        : err instanceof ApiError
          ? err.message
          : clientMessage(err, status, request)
    request.log.info({ status, code: (err as { code?: unknown }).code }, message)
    return sendError(reply, status, message)
  })
  app.setNotFoundHandler((request, reply) => {
    // Unknown paths are v2 paths too (every path but the root is routed to v2): same headers.
    const { minor = MIN_MINOR } = negotiateMicroversion(request.headers[VERSION_HEADER])
    reply.headers(VERSION_RESPONSE_HEADERS[minor]!)
    const path = request.url.split('?')[0]
    return sendError(reply, 404, `The resource could not be found: ${request.method} ${path}`)
  })
}
