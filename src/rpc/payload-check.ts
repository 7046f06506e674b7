/**
 * Checks RPC payloads against TypeBox schemas, compiled once, and fails the way the conductor always
 * has: an InvalidInputError `<field>: <problem>` with `details.field`, the field in dotted notation
 * (`devices[0].deployables[1].attributes[2].key`, `<arq uuid>.instance_uuid`). A schema node may carry
 * its own problem text ({@link PROBLEM}) and its field's wire name ({@link FIELD}); otherwise the
 * kind of failure decides the words. The building blocks below carry both.
 */
import { Kind, type Static, type TSchema } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors'
import { InvalidInputError } from '../domain/errors.js'

/** A node's own problem text, used for every failure at that node ("must be a UUID"). */
export const PROBLEM = 'x-invalid'
/** The name a property has in messages when it differs from the payload's (`instance_uuid`). */
export const FIELD = 'x-field'
/** On a record that allows only some keys: `{ field, problem }` for a key it does not allow. */
export const KEY = 'x-key'

/** Fails with InvalidInputError naming `field`. */
export function invalid(field: string, problem: string): never {
  throw new InvalidInputError(`${field}: ${problem}`, { details: { field } })
}

/** Checks a value, or throws naming the field at fault; `root` names the value itself. */
export type PayloadCheck<T extends TSchema> = (value: unknown, root?: string) => Static<T>

/** Compiles `schema` once. Only a failing value pays for reading the errors. */
export function compilePayload<T extends TSchema>(schema: T): PayloadCheck<T> {
  const compiled = TypeCompiler.Compile(schema)
  return (value, root = 'request') => {
    if (compiled.Check(value)) return value
    let first: ValueError | undefined
    for (const e of compiled.Errors(value)) {
      // A missing required property fails its own schema next; that failure has the words.
      if (e.type !== ValueErrorType.ObjectRequiredProperty) return fail(schema, e, root)
      first ??= e
    }
    return fail(schema, first, root)
  }
}

function fail(schema: TSchema, found: ValueError | undefined, root: string): never {
  if (found === undefined) return invalid(root, 'is invalid')
  const error = unwrapNullable(found)
  const key = (error.schema as Record<string, unknown>)[KEY] as
    { field: string; problem: string } | undefined
  if (error.type === ValueErrorType.ObjectAdditionalProperties && key)
    return invalid(key.field, key.problem)
  return invalid(fieldOf(schema, error.path, root), problemOf(error))
}

/** `X | null` given something else than null fails as X does (its path and its words). */
function unwrapNullable(error: ValueError): ValueError {
  if (error.type !== ValueErrorType.Union || typeof error.schema[PROBLEM] === 'string') return error
  const variants = error.schema.anyOf as TSchema[]
  const others = variants.flatMap((v, i) => (v[Kind] === 'Null' ? [] : [i]))
  const inner = others.length === 1 ? error.errors[others[0]!]?.First() : undefined
  return inner ? unwrapNullable(inner) : error
}

/** The schema of `segment` under `node` (a property, a record's value, an array's item). */
function childOf(node: TSchema | undefined, segment: string): TSchema | undefined {
  const kind = node?.[Kind] as string | undefined
  if (node === undefined) return undefined
  if (kind === 'Object') {
    const own = (node.properties as Record<string, TSchema>)[segment]
    const rest = node.additionalProperties as TSchema | boolean | undefined
    return own ?? (typeof rest === 'object' ? rest : undefined)
  }
  if (kind === 'Record') return Object.values(node.patternProperties as Record<string, TSchema>)[0]
  if (kind === 'Array') return node.items as TSchema
  if (kind === 'Union')
    for (const variant of node.anyOf as TSchema[]) {
      const found = childOf(variant, segment)
      if (found) return found
    }
  return undefined
}

/** `/devices/0/controlPath/type` → `devices[0].controlPath.type`; renamed by {@link FIELD}. */
export function fieldOf(schema: TSchema, pointer: string, root: string): string {
  if (pointer === '') return root
  let node: TSchema | undefined = schema
  // An index is no name: a list checked on its own is named by `root` (`arqs[0]`).
  let field = schema[Kind] === 'Array' ? root : ''
  for (const raw of pointer.slice(1).split('/')) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    const child = childOf(node, segment)
    if (node?.[Kind] === 'Array') field += `[${segment}]`
    else {
      const name = (child?.[FIELD] as string | undefined) ?? segment
      field += field === '' ? name : `.${name}`
    }
    node = child
  }
  return field
}

/** The words of a failure by its kind, when its node has none of its own. */
const WORDS: Partial<Record<ValueErrorType, (schema: TSchema) => string>> = {
  [ValueErrorType.String]: () => 'must be a string',
  [ValueErrorType.StringMinLength]: (s) =>
    s.minLength === 1 ? 'must not be empty' : `must be at least ${String(s.minLength)} characters`,
  [ValueErrorType.StringMaxLength]: (s) => `must be at most ${String(s.maxLength)} characters`,
  [ValueErrorType.Array]: () => 'must be an array',
  [ValueErrorType.ArrayMinItems]: () => 'must not be empty',
  [ValueErrorType.Object]: () => 'must be an object',
  [ValueErrorType.Boolean]: () => 'must be a boolean',
}

/** The words of one failure: its node's own, else by kind, else TypeBox's. */
function problemOf({ schema, type, message }: ValueError): string {
  if (typeof schema[PROBLEM] === 'string') return schema[PROBLEM]
  return WORDS[type]?.(schema) ?? message
}
