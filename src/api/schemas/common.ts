/**
 * The building blocks of the route documentation (src/api/openapi.ts): the error body, links,
 * uuids, paging, and {@link RouteDoc}, what a route declares about itself for the OpenAPI
 * documents. A route's documented query string is the schema its requests are checked against
 * (src/api/routing.ts); bodies are checked by their route's `schema.body` where one is given, and
 * responses are described only (docs/api-openapi.md says which and why).
 */
import { Type, type Static, type StringOptions, type TSchema } from '@sinclair/typebox'
import { withProblem } from '../validation-errors.js'
import { UUID_PATTERN } from '../../domain/ids.js'

/** What a route tells the OpenAPI documents; every key but `hide` is an OpenAPI/Fastify schema key. */
export interface RouteDoc {
  summary: string
  description?: string
  /** @default the tag the route's file gives */
  tags?: string[]
  params?: TSchema
  querystring?: TSchema
  /** The request body as documented; a route with a validating `schema.body` needs none here. */
  body?: TSchema
  headers?: TSchema
  /** By status code: every success and every error the route answers. */
  response: Record<string, TSchema>
  /** `[]` for the routes that need no token (the version documents, /healthcheck, /metrics). */
  security?: Record<string, string[]>[]
}

/** OpenStack Cyborg's fault, the value of `error_message` in {@link ErrorBody}. */
export const Fault = Type.Object({
  faultcode: Type.Union([Type.Literal('Client'), Type.Literal('Server')]),
  faultstring: Type.String({ description: 'What went wrong, naming the field at fault' }),
  debuginfo: Type.Null(),
})

/**
 * Every error of the API (v1, v2, admin): `{"error_message": {faultcode, faultstring, debuginfo}}`
 * as OpenStack Cyborg 17.0.0 sends it; python-cyborgclient's own HTTP client gets the JSON text of
 * the fault instead, as Cyborg ≤ 16.x sent it to everyone (src/api/errors.ts).
 */
export const ErrorBody = Type.Object(
  {
    error_message: Type.Union([
      Fault,
      Type.String({
        description:
          'The JSON text of the fault: only for User-Agent python-cyborgclient (Cyborg ≤ 16.x form)',
        contentMediaType: 'application/json',
        contentSchema: Fault,
      }),
    ]),
  },
  { $id: 'ErrorBody', additionalProperties: false },
)

const ERRORS: Record<number, string> = {
  400: 'Invalid input: the message names the field or parameter at fault',
  401: 'No token, or an invalid, expired or revoked one (Keystone auth)',
  403: 'The policy refuses the caller',
  404: 'No such resource (a malformed uuid is answered the same way)',
  405: 'The path does not take this method (`Allow` lists the ones it takes)',
  406: 'The requested microversion is not supported, or the request needs a newer one',
  409: 'The request conflicts with the current state',
  413: 'The request body is larger than `[api] max_request_body_size`',
  415: 'The body is not application/json',
  423: 'Locked: an accelerator request of the instance is still binding',
  429: 'Too many failed attempts from this address: try again after `Retry-After` seconds',
  503: 'A dependency (conductor, agent, Keystone, database) did not answer in time',
}

/** Error responses by status, each with {@link ErrorBody}. */
export function errors(...codes: number[]): Record<string, TSchema> {
  return Object.fromEntries(
    codes.map((code) => [String(code), Type.Ref('ErrorBody', { description: ERRORS[code] })]),
  )
}

/** The errors any route with a token and a policy can answer, plus `codes`. */
export function guarded(...codes: number[]): Record<string, TSchema> {
  return errors(...[...new Set([401, 403, ...codes, 503])].sort((a, b) => a - b))
}

/** The errors of a route taking a JSON body, plus `codes`. */
export function guardedWrite(...codes: number[]): Record<string, TSchema> {
  return guarded(400, 413, 415, ...codes)
}

/** A response without a body (`204`, the `200` of POST …/disable, `202` of PATCH ARQs). */
export const NoBody = (description: string) => Type.Null({ description })

export const Uuid = Type.String({ format: 'uuid' })
/** `2026-11-22T03:42:44.123000+00:00`: OpenStack Cyborg's rendering. */
export const Timestamp = Type.String({ description: 'ISO 8601 with microseconds and offset' })
export const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])
export const NullableString = nullable(Type.String())
export const NullableTimestamp = nullable(Timestamp)

export const Link = Type.Object({ href: Type.String({ format: 'uri' }), rel: Type.String() })
export const Links = Type.Array(Link)

/** A string that is one of `values`. */
export const stringEnum = (values: readonly string[], options: { description?: string } = {}) =>
  Type.Unsafe<string>({ type: 'string', enum: [...values], ...options })

/** `:uuid` path parameter (a malformed one is a 404 like an unknown one). */
export const UuidParams = Type.Object({ uuid: Type.String({ description: 'A UUID' }) })

/** A query parameter: one string (given twice it is `must be given at most once`). */
export const QueryString = (options: StringOptions = {}, problem?: string) =>
  problem === undefined ? Type.String(options) : withProblem(Type.String(options), problem)

/** An 8-4-4-4-12 hex uuid in any case (isUuidLike), unanchored: build patterns from it. */
export const UUID_PATTERN_ANY_CASE_BODY = UUID_PATTERN.replaceAll('a-f', 'a-fA-F')
/** An 8-4-4-4-12 hex uuid in any case (isUuidLike), as a JSON Schema pattern. */
export const UUID_ANY_CASE_PATTERN = `^${UUID_PATTERN_ANY_CASE_BODY}$`

/** A `?x=<uuid>` parameter: `must be a UUID, got "…"` (any case, like the stored lookups). */
export const QueryUuid = (description?: string) =>
  QueryString(
    { pattern: UUID_ANY_CASE_PATTERN, ...(description === undefined ? {} : { description }) },
    'must be a UUID, got {value}',
  )

/** `limit`, `marker`, `sort_key` (one of `sortKeys`) and `sort_dir`. */
export function pagingQuery(sortKeys: readonly string[]) {
  return {
    limit: Type.Optional(
      QueryString(
        { pattern: '^[1-9][0-9]{0,8}$', description: 'Page size' },
        'must be a positive integer, got {value}',
      ),
    ),
    marker: Type.Optional(
      QueryString({ description: 'The uuid of the last item of the previous page' }),
    ),
    sort_key: Type.Optional(stringEnum(sortKeys)),
    sort_dir: Type.Optional(withProblem(stringEnum(['asc', 'desc']), 'must be asc or desc')),
  }
}

/** The parsed values of a query string schema (its parameters are checked before the handler). */
export type QueryOf<T extends TSchema> = Static<T>

/** The schemas that the documents hold once under `components/schemas` (app.addSchema). */
export const SHARED_SCHEMAS: TSchema[] = [ErrorBody]
