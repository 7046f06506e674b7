/**
 * Schema failures (ajv, through Fastify) in OpenStack Cyborg's words: `Invalid input for field
 * 'limit': must be a positive integer, got "x"`. Routes validate their query strings and most
 * bodies with TypeBox schemas (docs/api-openapi.md); this file keeps the messages clients and
 * tests rely on:
 * - a schema node may carry its own problem text in {@link PROBLEM} (`x-invalid`): a string for any
 *   failure at or under the node (the deepest such node on the failing keyword's path wins), or a
 *   map from keyword to text for the node's own keywords only (`{type: …, minItems: …}`; `required`
 *   when the node is the missing property, `additionalProperties` for an unknown one), which wins
 *   over any string. In the text, `{value}` stands for the JSON of the value at fault, `{kind}` for
 *   what it is (`a string`, `a list of 2`, `null`, …) and `{key}` for the JSON of its name;
 * - a query parameter given twice (`?limit=1&limit=2`, an array after parsing) where the schema
 *   wants one value is `must be given at most once`;
 * - otherwise the keyword decides (required, unknown field, one of, type);
 * - the field is ajv's path without the leading `/` (`0/groups/0/resources:FPGA`), or, for a schema
 *   that asks with {@link withFieldStyle}, Cyborg's `groups[0]["resources:FPGA"]`.
 */
import type { TSchema } from '@sinclair/typebox'

/** The schema keyword that holds a node's own problem text (declared to ajv in app.ts). */
export const PROBLEM = 'x-invalid'

/**
 * The ajv options of every app (src/api/app.ts; tests use them too): strict validation (ts-deps.md
 * pitfall 5: never strip unknown fields or coerce types), and {@link PROBLEM} declared as an
 * annotation, never a check.
 */
export const AJV_OPTIONS = {
  customOptions: {
    removeAdditional: false,
    coerceTypes: false,
    allErrors: false,
    allowUnionTypes: true,
    keywords: [PROBLEM],
  },
} as const

/** A node's problem text: for any failure at or under it, or by keyword for its own keywords. */
export type Problem = string | Readonly<Record<string, string>>

/** Adds the problem text of {@link PROBLEM} to a schema (see the placeholders above). */
export function withProblem<T extends TSchema>(schema: T, problem: Problem): T {
  return { ...schema, [PROBLEM]: problem }
}

/** How a body's messages name its fields (see {@link withFieldStyle}). */
export interface FieldStyle {
  /** `groups[0]["resources:FPGA"]`: list indexes and keys in brackets, after the first name. */
  brackets?: boolean
  /**
   * The body is a list of one item, named as the body itself: its fields are `name`, not
   * `0/name`; the item is `body[0]` (with brackets).
   */
  single?: boolean
}

/**
 * Where a root schema keeps its {@link FieldStyle}: a symbol, so that neither ajv (which would
 * refuse an unknown keyword) nor the documents see it. Fastify keeps the route's schema object.
 */
export const FIELD_STYLE = Symbol('field style')

/** Asks for Cyborg's field names in the messages of a route's schema (put it on the root). */
export function withFieldStyle<T extends TSchema>(schema: T, style: FieldStyle): T {
  return { ...schema, [FIELD_STYLE]: style }
}

export interface AjvError {
  instancePath: string
  schemaPath?: string
  keyword: string
  params: Record<string, unknown>
  message?: string
  /** Set by ajv on a `propertyNames` failure: the key at fault. */
  propertyName?: string
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
 * The problem text that {@link PROBLEM} gives `e` in `schema`: the owner's entry for the keyword,
 * else the deepest string on `schemaPath` (for a missing property, down to that property's schema).
 */
function annotatedProblem(schema: unknown, e: AjvError): string | undefined {
  if (e.schemaPath === undefined || !e.schemaPath.startsWith('#')) return undefined
  const path = tokens(e.schemaPath)
  if (e.keyword === 'required') path.splice(-1, 1, 'properties', String(e.params.missingProperty))
  // The node whose keyword failed: for `required`, the missing property's schema.
  const owner = e.keyword === 'required' ? path.length : path.length - 1
  let node = schema
  let found: string | undefined
  for (const [i, token] of ['', ...path].entries()) {
    if (token !== '') node = child(node, token)
    const text = child(node, PROBLEM)
    if (typeof text === 'string') found = text
    const own = i === owner ? child(text, e.keyword) : undefined
    if (typeof own === 'string') return own
  }
  return e.keyword === 'additionalProperties' ? undefined : found
}

/** `null`, `a string`, `a list of 2`, `an object`: what a value is. */
function kindOf(value: unknown): string {
  if (value === undefined) return 'nothing'
  if (value === null) return 'null'
  if (Array.isArray(value)) return `a list of ${value.length}`
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`
}

/** `groups[0]["resources:FPGA"]` (brackets) or `0/groups/0/resources:FPGA` (a pointer's tokens). */
function fieldName(path: string[], data: unknown, context: string, style: FieldStyle): string {
  let node = data
  let rest = path
  if (style.single && Array.isArray(data) && path[0] === '0' && path.length > 1) {
    node = data[0]
    rest = path.slice(1)
  }
  if (!style.brackets) return rest.join('/')
  let out = ''
  for (const token of rest) {
    if (Array.isArray(node)) out = `${out || context}[${token}]`
    else out = out === '' ? token : `${out}[${JSON.stringify(token)}]`
    node = child(node, token)
  }
  return out
}

/** Turns an ajv failure into "Invalid input for field 'x': …" (see the file's comment for the field). */
export function formatValidationError(
  errors: readonly AjvError[],
  context: string,
  source: ValidationSource = {},
): string {
  const e = errors[0]
  if (!e) return `Invalid input in ${context}`
  const path = tokens(e.instancePath)
  let value = path.reduce<unknown>((node, token) => child(node, token), source.data)
  const root = source.schema
  const style =
    (root !== null && typeof root === 'object' ? (root as never)[FIELD_STYLE] : {}) ?? {}
  const annotated = annotatedProblem(root, e)
  let problem = e.message ?? 'is invalid'
  const repeated =
    e.schemaPath === `#/properties/${e.instancePath.replace(/^\//, '')}/type` &&
    Array.isArray(value)
  if (context === 'querystring' && repeated) {
    problem = 'must be given at most once'
  } else if (e.keyword === 'required') {
    path.push(String(e.params.missingProperty))
    value = undefined
    problem = annotated ?? 'required'
  } else if (e.keyword === 'additionalProperties') {
    path.push(String(e.params.additionalProperty))
    value = undefined
    problem = annotated ?? 'unknown field'
  } else if (e.propertyName !== undefined) {
    path.push(e.propertyName) // the key is at fault (propertyNames)
    value = e.propertyName
    problem = annotated ?? problem
  } else if (annotated !== undefined) {
    problem = annotated
  } else if (e.keyword === 'enum' && Array.isArray(e.params.allowedValues)) {
    problem = `must be one of: ${e.params.allowedValues.join(', ')}`
  } else if (e.keyword === 'type') {
    problem = `must be ${String(e.params.type).replace(',', ' or ')}`
  }
  if (annotated !== undefined) {
    const key = path.at(-1)
    problem = problem.replace(/\{(value|kind|key)\}/g, (_, name: string) =>
      name === 'kind'
        ? kindOf(value)
        : name === 'key'
          ? JSON.stringify(key ?? context)
          : (JSON.stringify(value) ?? 'nothing'),
    )
  }
  const field = fieldName(path, source.data, context, style)
  return `Invalid input for field '${field || context}': ${problem}`
}
