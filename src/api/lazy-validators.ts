/**
 * Route validators compiled on first use (issue 28 part 2.1). Fastify compiles every route's
 * schemas with ajv while the app starts: 80–150 ms of `cyborg up`'s start-up, for about 200
 * validators of which a start-up and most workloads use a handful. Here Fastify's own compiler
 * (@fastify/ajv-compiler, with the server's `ajv` options) is wrapped: a route gets a function that
 * compiles its validator the first time a request reaches it, then calls it. The validator, its
 * `errors` and so every 4xx message are the ones the eager path made (validation-errors.ts).
 *
 * A schema ajv cannot compile no longer fails the start but the route's first request (a 500);
 * {@link compileAllValidators} compiles every pending validator now, for a test to prove that none
 * fails. Header schemas are compiled as given (Fastify lower-cases their property names only for
 * its default compiler): a header property spelled with a capital is refused at registration.
 */
import AjvCompiler from '@fastify/ajv-compiler'
import type { FastifyInstance } from 'fastify'

type BuildCompiler = ReturnType<typeof AjvCompiler>
type Validate = ReturnType<ReturnType<BuildCompiler>>

/** What Fastify passes a validator compiler (its types name only the schema). */
interface RouteDefinition {
  schema: unknown
  url?: string
  httpPart?: string
}

/** What Fastify's validation reads from a validator (lib/validation.js). */
interface LazyValidate {
  (data: unknown, context?: unknown): unknown
  errors?: Validate['errors']
  /** Set so that Fastify passes the parent data, as it does for an ajv validator. */
  schemaEnv: true
}

/** The validators of an app not yet compiled, by app (for {@link compileAllValidators}). */
const pendingByApp = new WeakMap<object, Set<() => void>>()

function refuseCapitalHeaders(route: RouteDefinition): void {
  if (route.httpPart !== 'headers') return
  const properties =
    (route.schema as { properties?: Record<string, unknown> } | null)?.properties ?? {}
  for (const name of Object.keys(properties))
    if (name !== name.toLowerCase())
      throw new Error(`header schema property '${name}' must be lower case (${route.url})`)
}

/** One route part's validator, compiled on its first call. */
function lazyValidate(compile: () => Validate, pending: Set<() => void>): LazyValidate {
  let validate: Validate | undefined
  const ready = (): Validate => {
    if (validate === undefined) {
      validate = compile()
      pending.delete(ready)
    }
    return validate
  }
  pending.add(ready)
  const lazy: LazyValidate = Object.assign(
    (data: unknown, context?: unknown) => {
      const v = ready()
      const result = (v as (d: unknown, c?: unknown) => unknown)(data, context)
      lazy.errors = v.errors
      return result
    },
    { schemaEnv: true as const },
  )
  return lazy
}

/**
 * The `schemaController.compilersFactory.buildValidator` for an app: Fastify's default, made lazy.
 * `register` ties the validators it makes to the app once the app exists.
 */
export function lazyValidators(): {
  buildValidator: BuildCompiler
  register: (app: FastifyInstance) => void
} {
  const eager = AjvCompiler()
  const pending = new Set<() => void>()
  const buildValidator = (...args: Parameters<BuildCompiler>) => {
    const compile = eager(...args) as unknown as (route: RouteDefinition) => Validate
    return (route: RouteDefinition) => {
      refuseCapitalHeaders(route)
      return lazyValidate(() => compile(route), pending)
    }
  }
  return {
    // Fastify's type wants ajv's function (with its `schema`); Fastify itself calls it and reads
    // `errors` and `schemaEnv` only, which the lazy one has.
    buildValidator: buildValidator as unknown as BuildCompiler,
    register: (app) => pendingByApp.set(app, pending),
  }
}

/** Compiles every validator of `app` not yet compiled (after `app.ready()`); returns how many. */
export function compileAllValidators(app: FastifyInstance): number {
  const pending = [...(pendingByApp.get(app) ?? [])]
  for (const ready of pending) ready()
  return pending.length
}
