/**
 * Queries of a fixed shape, built and compiled once per database (its root instance and
 * transactions) instead of once per call.
 *
 * Why: on the API's hot reads (one device, one profile, the profile list) building the query
 * (frozen operation nodes) and compiling it to SQL cost more CPU than SQLite takes to answer it.
 * The SQL text of a fixed-shape query never changes, only its parameters do, so the query is
 * compiled once with placeholders for its arguments and each call executes that compiled query
 * with the caller's values in their places. On SQLite a precompiled read runs directly on the
 * connection when nothing holds it (see DirectReader in connection.ts); otherwise, and on the
 * other dialects, it goes through the instance's executor (connection mutex, pools,
 * transactions, plugins).
 *
 * The compiled query is shared by a database's root instance and its transactions (they share the
 * dialect's adapter, and so its SQL): the conductor runs its writes in a new transaction each time,
 * and would otherwise build and compile them again in each (issue 28). An instance with plugins
 * (which may rewrite the query) keeps its own.
 */
import type { Compilable, CompiledQuery, Kysely, QueryResult } from 'kysely'
import { directReaderOf, type ReadOnlyKysely } from './connection.js'

/** What a precompiled query's builder receives in place of the caller's `index`-th argument. */
class Arg {
  constructor(readonly index: number) {}
}

interface Compiled<R> {
  query: CompiledQuery<R>
  /** For each parameter of the SQL: the caller's argument index, or -1 for a constant. */
  slots: number[]
  /** The parameters are exactly the caller's arguments, in order (the usual case). */
  asGiven: boolean
}

/** A precompiled query: call it for every row, or `.first` for the first row only. */
export interface Precompiled<DB, R, A extends unknown[]> {
  (db: ReadOnlyKysely<DB>, ...args: A): Promise<R[]>
  /** The first row, or undefined when none; on SQLite's direct path the read stops there. */
  first(db: ReadOnlyKysely<DB>, ...args: A): Promise<R | undefined>
}

/** A precompiled write: call it to execute it, as `execute()` of its builder would. */
export type PrecompiledWrite<DB, A extends unknown[]> = (
  db: Kysely<DB>,
  ...args: A
) => Promise<QueryResult<unknown>>

/** What `keyOf` needs of an instance. */
interface Executing {
  getExecutor(): { adapter: object; plugins: readonly unknown[] }
}

/** What compiled queries are kept by: the dialect's adapter, shared with the instance's transactions. */
const keyOf = (db: Executing): object => {
  const executor = db.getExecutor()
  return executor.plugins.length === 0 ? executor.adapter : db
}

/** Compiles `build` once per key (see keyOf) and binds each call's arguments. */
function compiler<D extends Executing, R, A extends unknown[]>(
  build: (db: D, ...args: A) => Compilable<R>,
) {
  const arity = build.length - 1
  const placeholders = Array.from({ length: arity }, (_, i) => new Arg(i)) as unknown as A
  const cache = new WeakMap<object, Compiled<R>>()
  const compile = (db: D, key: object): Compiled<R> => {
    const query = build(db, ...placeholders).compile()
    const slots = query.parameters.map((p) => (p instanceof Arg ? p.index : -1))
    for (let i = 0; i < arity; i++) {
      if (!slots.includes(i))
        throw new TypeError(`precompile: the query does not use argument ${i + 1}`)
    }
    const asGiven = slots.length === arity && slots.every((slot, i) => slot === i)
    const compiled = { query, slots, asGiven }
    cache.set(key, compiled)
    return compiled
  }
  /** The query compiled for `db`, with `args` in its parameters' places. */
  return (db: D, args: A): CompiledQuery<R> => {
    const key = keyOf(db)
    const { query, slots, asGiven } = cache.get(key) ?? compile(db, key)
    const parameters = asGiven
      ? args
      : slots.map((slot, i) => (slot < 0 ? query.parameters[i] : args[slot]))
    return { ...query, parameters }
  }
}

/**
 * Returns the query `build` describes, precompiled. `build` is called once per database (its root
 * instance and transactions share it; see keyOf) with placeholders for its arguments after `db`; the
 * compiled query is kept and each call runs it with the caller's values in their places.
 * `build` must use its arguments only as bound values (`where(col, '=', uuid)`, `limit(n)`): not
 * in conditions, not as identifiers, not as lists (an `in` list changes the SQL with its length).
 * @throws TypeError on first use with an instance when `build` left an argument unused.
 */
export function precompile<DB, R, A extends unknown[]>(
  build: (db: ReadOnlyKysely<DB>, ...args: A) => Compilable<R>,
): Precompiled<DB, R, A> {
  const bound = compiler(build)
  const all = async (db: ReadOnlyKysely<DB>, ...args: A): Promise<R[]> => {
    const query = bound(db, args)
    const statement = directReaderOf(db)?.(query.sql)
    if (statement) return statement.all(query.parameters) as R[]
    return (await db.executeQuery<R>(query)).rows
  }
  const first = async (db: ReadOnlyKysely<DB>, ...args: A): Promise<R | undefined> => {
    const query = bound(db, args)
    const statement = directReaderOf(db)?.(query.sql)
    if (statement) return statement.get(query.parameters) as R | undefined
    return (await db.executeQuery<R>(query)).rows[0]
  }
  return Object.assign(all, { first })
}

/**
 * Returns the write `build` describes (an INSERT, UPDATE or DELETE of a fixed shape), precompiled as
 * `precompile` does a read, under the same rules for its arguments.
 */
export function precompileWrite<DB, A extends unknown[]>(
  build: (db: Kysely<DB>, ...args: A) => Compilable<unknown>,
): PrecompiledWrite<DB, A> {
  const bound = compiler(build)
  return (db, ...args) => db.executeQuery(bound(db, args))
}
