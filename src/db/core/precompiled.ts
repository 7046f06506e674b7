/**
 * Queries of a fixed shape, built and compiled once per Kysely instance instead of once per call.
 *
 * Why: on the API's hot reads (one device, one profile, the profile list) building the query
 * (frozen operation nodes) and compiling it to SQL cost more CPU than SQLite takes to answer it.
 * The SQL text of a fixed-shape query never changes, only its parameters do, so the query is
 * compiled once with placeholders for its arguments and each call executes that compiled query
 * with the caller's values in their places. On SQLite a precompiled read runs directly on the
 * connection when nothing holds it (see DirectReader in connection.ts); otherwise, and on the
 * other dialects, it goes through the instance's executor (connection mutex, pools,
 * transactions, plugins).
 */
import type { Compilable, CompiledQuery } from 'kysely'
import { directReaderOf, type DirectReader, type ReadOnlyKysely } from './connection.js'

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
  /** SQLite's direct reader, when the instance is the root one of a SQLite database. */
  direct: DirectReader | undefined
}

/** A precompiled query: call it for every row, or `.first` for the first row only. */
export interface Precompiled<DB, R, A extends unknown[]> {
  (db: ReadOnlyKysely<DB>, ...args: A): Promise<R[]>
  /** The first row, or undefined when none; on SQLite's direct path the read stops there. */
  first(db: ReadOnlyKysely<DB>, ...args: A): Promise<R | undefined>
}

/**
 * Returns the query `build` describes, precompiled. `build` is called once per Kysely instance
 * (so per dialect, and per transaction) with placeholders for its arguments after `db`; the
 * compiled query is kept and each call runs it with the caller's values in their places.
 * `build` must use its arguments only as bound values (`where(col, '=', uuid)`, `limit(n)`): not
 * in conditions, not as identifiers, not as lists (an `in` list changes the SQL with its length).
 * @throws TypeError on first use with an instance when `build` left an argument unused.
 */
export function precompile<DB, R, A extends unknown[]>(
  build: (db: ReadOnlyKysely<DB>, ...args: A) => Compilable<R>,
): Precompiled<DB, R, A> {
  const arity = build.length - 1
  const placeholders = Array.from({ length: arity }, (_, i) => new Arg(i)) as unknown as A
  const cache = new WeakMap<object, Compiled<R>>()
  const compile = (db: ReadOnlyKysely<DB>): Compiled<R> => {
    const query = build(db, ...placeholders).compile()
    const slots = query.parameters.map((p) => (p instanceof Arg ? p.index : -1))
    for (let i = 0; i < arity; i++) {
      if (!slots.includes(i))
        throw new TypeError(`precompile: the query does not use argument ${i + 1}`)
    }
    const asGiven = slots.length === arity && slots.every((slot, i) => slot === i)
    const compiled = { query, slots, asGiven, direct: directReaderOf(db) }
    cache.set(db, compiled)
    return compiled
  }
  const bind = ({ query, slots, asGiven }: Compiled<R>, args: A): readonly unknown[] =>
    asGiven ? args : slots.map((slot, i) => (slot < 0 ? query.parameters[i] : args[slot]))

  const all = async (db: ReadOnlyKysely<DB>, ...args: A): Promise<R[]> => {
    const compiled = cache.get(db) ?? compile(db)
    const parameters = bind(compiled, args)
    const statement = compiled.direct?.(compiled.query.sql)
    if (statement) return statement.all(parameters) as R[]
    return (await db.executeQuery<R>({ ...compiled.query, parameters })).rows
  }
  const first = async (db: ReadOnlyKysely<DB>, ...args: A): Promise<R | undefined> => {
    const compiled = cache.get(db) ?? compile(db)
    const parameters = bind(compiled, args)
    const statement = compiled.direct?.(compiled.query.sql)
    if (statement) return statement.get(parameters) as R | undefined
    return (await db.executeQuery<R>({ ...compiled.query, parameters })).rows[0]
  }
  return Object.assign(all, { first })
}
