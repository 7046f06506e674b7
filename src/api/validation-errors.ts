/**
 * Schema failures (ajv, through Fastify) in OpenStack Cyborg's words: `Invalid input for field
 * 'limit': must be a positive integer, got "x"`. Routes validate their query strings and most
 * bodies with TypeBox schemas (docs/api-openapi.md); this file keeps the messages clients and
 * tests rely on:
 * - a schema node may carry its own problem text in {@link PROBLEM} (`x-invalid`), where
 *   `{value}` stands for the JSON of the value at fault; the deepest such node on the failing
 *   keyword's path wins;
 * - a query parameter given twice (`?limit=1&limit=2`, an array after parsing) where the schema
 *   wants one value is `must be given at most once`;
 * - otherwise the keyword decides (required, unknown field, one of, type).
 */
import type { TSchema } from '@sinclair/typebox'

/** The schema keyword that holds a node's own problem text (declared to ajv in app.ts). */
export const PROBLEM = 'x-invalid'

/** Adds the problem text of {@link PROBLEM} to a schema: `{value}` is the JSON of the value. */
export function withProblem<T extends TSchema>(schema: T, problem: string): T {
  return { ...schema, [PROBLEM]: problem }
}

export interface AjvError {
  instancePath: string
  schemaPath?: string
  keyword: string
  params: Record<string, unknown>
  message?: string
}

/** What {@link formatValidationError} may look into: the validated data and its schema. */
export interface ValidationSource {
  /** The schema that failed (the route's `schema[context]`). */
  schema?: unknown
  /** The data it was given (the parsed query string, the body, …). */
  data?: unknown
}

const unescape = (token: string) => token.replace(/~1/g, '/').replace(/~0/g, '~')

/** A fragment's percent-escapes decoded; text that is not valid escaping is kept as it is. */
function decodeFragment(token: string): string {
  try {
    return decodeURIComponent(token)
  } catch {
    return token
  }
}

/**
 * The tokens of a JSON pointer: ajv's `instancePath` is a plain pointer (`/a~1b/0`), its
 * `schemaPath` a URI fragment (`#/properties/a%25b`), whose escapes are decoded too.
 */
const tokens = (pointer: string) => {
  const fragment = pointer.startsWith('#')
  return pointer
    .replace(/^#/, '')
    .split('/')
    .filter((t) => t !== '')
    .map((t) => unescape(fragment ? decodeFragment(t) : t))
}

function child(node: unknown, token: string): unknown {
  return node !== null && typeof node === 'object'
    ? (node as Record<string, unknown>)[token]
    : undefined
}

/**
 * The deepest {@link PROBLEM} text on `schemaPath` in `schema`, if any. For a missing property
 * (`required`), the text of that property's schema.
 */
function annotatedProblem(schema: unknown, e: AjvError): string | undefined {
  if (e.schemaPath === undefined || !e.schemaPath.startsWith('#')) return undefined
  const path = tokens(e.schemaPath)
  if (e.keyword === 'required') path.splice(-1, 1, 'properties', String(e.params.missingProperty))
  let node = schema
  let found: string | undefined
  for (const token of ['', ...path]) {
    if (token !== '') node = child(node, token)
    const text = child(node, PROBLEM)
    if (typeof text === 'string') found = text
  }
  return found
}

/** The value at `instancePath` in `data`. */
function valueAt(data: unknown, instancePath: string): unknown {
  return tokens(instancePath).reduce<unknown>((node, token) => child(node, token), data)
}

/** Turns an ajv failure into "Invalid input for field 'x': …" (the field as a JSON pointer without the leading '/'). */
export function formatValidationError(
  errors: readonly AjvError[],
  context: string,
  source: ValidationSource = {},
): string {
  const e = errors[0]
  if (!e) return `Invalid input in ${context}`
  let field = e.instancePath.replace(/^\//, '')
  const value = valueAt(source.data, e.instancePath)
  const join = (name: unknown) => (field ? `${field}/${String(name)}` : String(name))
  const annotated = annotatedProblem(source.schema, e)
  let problem = e.message ?? 'is invalid'
  const repeated = e.schemaPath === `#/properties/${field}/type` && Array.isArray(value)
  if (context === 'querystring' && repeated) {
    problem = 'must be given at most once'
  } else if (e.keyword === 'required') {
    field = join(e.params.missingProperty)
    problem = annotated ?? 'required'
  } else if (e.keyword === 'additionalProperties') {
    field = join(e.params.additionalProperty)
    problem = 'unknown field'
  } else if (annotated !== undefined) {
    problem = annotated.replace('{value}', JSON.stringify(value) ?? 'nothing')
  } else if (e.keyword === 'enum' && Array.isArray(e.params.allowedValues)) {
    problem = `must be one of: ${e.params.allowedValues.join(', ')}`
  } else if (e.keyword === 'type') {
    problem = `must be ${String(e.params.type).replace(',', ' or ')}`
  }
  return `Invalid input for field '${field || context}': ${problem}`
}
