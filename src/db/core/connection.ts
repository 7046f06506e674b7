/**
 * Opens a database from an oslo-style connection URL and returns a Kysely instance over it.
 * Accepted forms (SQLAlchemy's): `sqlite://` (memory), `sqlite:///relative.db`, `sqlite:////abs/path.db`,
 * `postgresql://user:pass@host:5432/db` (also `postgresql+psycopg2://`, `postgres://`),
 * `mysql://user:pass@host:3306/db` (also `mysql+pymysql://`, `mariadb://`); MariaDB/MySQL also takes
 * several hosts, `mysql://user:pass@host1:3306,host2:3306/db`, used in order (mysql-pool.ts).
 */
import path from 'node:path'
import {
  CompiledQuery,
  Kysely,
  MysqlAdapter,
  MysqlDialect,
  PostgresDialect,
  SqliteAdapter,
  SqliteDialect,
  SqliteDriver,
  type Dialect as KyselyDialect,
  type KyselyConfig,
} from 'kysely'
import type SqliteDatabase from 'better-sqlite3'
import { ConfigError } from '../../domain/errors.js'
import { createMysqlPool, type MysqlHost } from './mysql-pool.js'
import type { Database } from './schema.js'

export type DialectName = 'sqlite' | 'postgres' | 'mysql'

/** Which database `db` (a root instance or a transaction) talks to. */
export function dialectOf(db: Pick<Kysely<Database>, 'getExecutor'>): DialectName {
  const adapter = db.getExecutor().adapter
  return adapter instanceof SqliteAdapter
    ? 'sqlite'
    : adapter instanceof MysqlAdapter
      ? 'mysql'
      : 'postgres'
}

/**
 * The database for reads only, as the API holds it: Kysely without its write and transaction entry
 * points (insertInto, updateTable, deleteFrom, …). Read repository functions take it; write ones
 * take a full Kysely, so a ReadDb cannot be handed to them.
 */
export type ReadDb = ReadOnlyKysely<Database>

/** Kysely over `DB` without its write and transaction entry points (see ReadDb). */
export type ReadOnlyKysely<DB> = Omit<
  Kysely<DB>,
  | 'insertInto'
  | 'replaceInto'
  | 'updateTable'
  | 'deleteFrom'
  | 'mergeInto'
  | 'transaction'
  | 'startTransaction'
  | 'connection'
  | 'schema'
  | 'with'
  | 'withRecursive'
  | 'withSchema'
  | 'withPlugin'
  | 'withoutPlugins'
  | 'withTables'
  | 'destroy'
>

export interface DatabaseHandle {
  db: Kysely<Database>
  dialect: DialectName
  /** The URL with any password replaced by `***`, safe to log. */
  safeUrl: string
  /**
   * SQLite only: copies the database to `dest` through SQLite's online backup API, so that what the
   * WAL holds is included and writers are not stopped (`cyborg db backup`).
   */
  backup?: (dest: string) => Promise<void>
  close(): Promise<void>
}

export interface OpenOptions {
  /** Pool size for PostgreSQL and MariaDB. @default 10 */
  poolSize?: number
  /** Base for relative SQLite paths. @default process.cwd() */
  baseDir?: string
  /**
   * Read only, for the commands that only read (`custody verify`, `db version`, `db check`, a dry
   * run): an SQLite file must exist and is opened read-only; PostgreSQL and MariaDB sessions are
   * read-only transactions, so that no statement (DDL included) can write. @default false
   */
  readOnly?: boolean
  /**
   * Kysely's `log` (tests counting statements, test/core/cycle-statements.test.ts). With one, SQLite
   * reads go through Kysely too (no direct reader), so that every statement is seen.
   */
  log?: KyselyConfig['log']
}

export interface ParsedUrl {
  dialect: DialectName
  /** SQLite file path (':memory:' for memory). */
  file?: string
  host?: string
  port?: number
  user?: string
  password?: string
  database?: string
  /** MariaDB/MySQL: every host of the URL in order (`host` and `port` are the first). */
  hosts?: MysqlHost[]
}

/** Parses a connection URL; throws ConfigError naming the expected forms. */
export function parseConnectionUrl(url: string, baseDir = process.cwd()): ParsedUrl {
  const scheme = /^([a-z0-9+]+):\/\//i.exec(url)?.[1]?.toLowerCase()
  const driver = scheme?.split('+')[0]
  if (driver === 'sqlite') {
    const rest = url.slice(url.indexOf('://') + 3)
    if (rest === '' || rest === '/' || rest === '/:memory:')
      return { dialect: 'sqlite', file: ':memory:' }
    if (!rest.startsWith('/')) throw badUrl(url)
    const file = rest.slice(1)
    return { dialect: 'sqlite', file: path.isAbsolute(file) ? file : path.resolve(baseDir, file) }
  }
  if (
    driver === 'postgresql' ||
    driver === 'postgres' ||
    driver === 'mysql' ||
    driver === 'mariadb'
  ) {
    // A host list (`h1:3306,h2:3306`) is no URL authority: parse the first host, keep the list.
    const list = /^[^:]+:\/\/(?:[^@/]*@)?([^/?#]*)/.exec(url)?.[1] ?? ''
    const many = list.includes(',')
    if (many && !driver.startsWith('m')) throw badUrl(url)
    let u: URL
    try {
      u = new URL(url.replace(/^[^:]+:/, 'http:').replace(list, list.split(',')[0]!))
    } catch {
      throw badUrl(url)
    }
    const database = decodeURIComponent(u.pathname.replace(/^\//, ''))
    if (!u.hostname || !database) throw badUrl(url)
    const dialect = driver.startsWith('postgres') ? 'postgres' : 'mysql'
    return {
      dialect,
      host: u.hostname,
      port: u.port ? Number(u.port) : dialect === 'postgres' ? 5432 : 3306,
      user: u.username
        ? decodeURIComponent(u.username)
        : dialect === 'postgres'
          ? 'postgres'
          : 'root',
      password: decodeURIComponent(u.password),
      database,
      ...(dialect === 'mysql'
        ? {
            hosts: many
              ? parseHosts(list, url)
              : [{ host: u.hostname, port: u.port ? Number(u.port) : 3306 }],
          }
        : {}),
    }
  }
  throw badUrl(url)
}

/** `h1:3306,h2,[::1]:3307` → hosts (port 3306 when not given); throws on an empty or bad entry. */
function parseHosts(list: string, url: string): MysqlHost[] {
  return list.split(',').map((entry) => {
    const m = /^(\[[^\]]+\]|[^:[\]]+)(?::(\d+))?$/.exec(entry)
    if (!m) throw badUrl(url)
    return { host: m[1]!.replace(/^\[|\]$/g, ''), port: m[2] ? Number(m[2]) : 3306 }
  })
}

function badUrl(url: string): ConfigError {
  return new ConfigError(
    `invalid database URL ${redactUrl(url)}: expected sqlite:///path, postgresql://user:pass@host:port/db or mysql+pymysql://user:pass@host:port/db`,
    { details: { expected: 'sqlite:///path | postgresql://… | mysql+pymysql://… | mysql://…' } },
  )
}

/** Replaces the password of a URL with `***`. */
export function redactUrl(url: string): string {
  return url.replace(/(\/\/[^:/@]*:)[^@]*@/, '$1***@')
}

/**
 * Kysely's SQLite driver prepares every query anew, and preparing costs more than running a small
 * indexed read. Queries are parameterised, so the SQL text of a query shape is stable: cache the
 * prepared statements by text (bounded, oldest evicted). A statement still being iterated is busy,
 * so a fresh one is prepared for that case.
 */
function withStatementCache(sqlite: SqliteDatabase.Database, max = 256) {
  const cache = new Map<string, SqliteDatabase.Statement>()
  const prepareNew = (sqlText: string) => {
    const statement = sqlite.prepare(sqlText)
    if (cache.size >= max) cache.delete(cache.keys().next().value as string)
    cache.set(sqlText, statement)
    return statement
  }
  return {
    close: () => sqlite.close(),
    prepare(sqlText: string) {
      const hit = cache.get(sqlText)
      if (!hit) return prepareNew(sqlText)
      return hit.busy ? sqlite.prepare(sqlText) : hit
    },
    /**
     * For a caller that knows no statement is being iterated (nothing holds the connection; a
     * Kysely stream holds it until it ends): skips the `busy` check, a native call that costs
     * about as much as a small read's own binding.
     */
    prepareIdle: (sqlText: string) => cache.get(sqlText) ?? prepareNew(sqlText),
  }
}

/**
 * Kysely's SQLite driver, telling whether a query or a transaction holds the one connection:
 * Kysely serialises them with a mutex and calls acquire and release inside it.
 */
class TrackingSqliteDriver extends SqliteDriver {
  #ready = false
  #held = false

  /** Initialised, not destroyed, and no query or transaction holds the connection. */
  get idle(): boolean {
    return this.#ready && !this.#held
  }

  override async init(options?: Parameters<SqliteDriver['init']>[0]): Promise<void> {
    await super.init(options)
    this.#ready = true
  }

  override async acquireConnection(): ReturnType<SqliteDriver['acquireConnection']> {
    const connection = await super.acquireConnection()
    this.#held = true
    return connection
  }

  override async releaseConnection(): Promise<void> {
    this.#held = false
    await super.releaseConnection()
  }

  override async destroy(): Promise<void> {
    this.#ready = false
    await super.destroy()
  }
}

/**
 * The prepared statement of a read-only `sql`, to run at once on the SQLite connection without
 * Kysely's executor (connection mutex, several promise hops), when nothing holds the connection:
 * then no transaction is open on it, so the read sees committed data only, as through Kysely.
 * Undefined when it may not run so (the connection held, a statement that writes); the caller
 * then goes through Kysely. The answer holds until the caller yields: run the statement first.
 */
export type DirectReader = (sql: string) => SqliteDatabase.Statement | undefined

/** By root Kysely instance of a SQLite database (transactions and plugin instances are others). */
const directReaders = new WeakMap<object, DirectReader>()

/** The direct reader of `db`: only a SQLite database's root instance has one. */
export function directReaderOf(db: object): DirectReader | undefined {
  return directReaders.get(db)
}

export async function openDatabase(
  url: string,
  options: OpenOptions = {},
): Promise<DatabaseHandle> {
  const parsed = parseConnectionUrl(url, options.baseDir)
  const { poolSize = 10, readOnly = false } = options
  let dialect: KyselyDialect
  let directReader: DirectReader | undefined
  let backup: DatabaseHandle['backup']
  if (parsed.dialect === 'sqlite') {
    const file = parsed.file ?? ':memory:'
    // Each driver loads with the first database of its dialect: a process loads one of the three.
    const { default: Sqlite } = await import('better-sqlite3')
    const sqlite = new Sqlite(file, { readonly: readOnly, fileMustExist: readOnly })
    // Setting the journal mode writes the file's header: a reader takes the mode it has.
    if (!readOnly) sqlite.pragma('journal_mode = WAL')
    sqlite.pragma('synchronous = NORMAL')
    sqlite.pragma('foreign_keys = ON')
    sqlite.pragma('busy_timeout = 10000')
    // All remaining pages in one step after the first: one consistent read, which writes by the
    // services' connections cannot restart halfway (they would, between steps of 100 pages).
    backup = async (dest) => void (await sqlite.backup(dest, { progress: () => 0x7fffffff }))
    const database = withStatementCache(sqlite)
    const driver = new TrackingSqliteDriver({ database })
    dialect = new (class extends SqliteDialect {
      override createDriver() {
        return driver
      }
    })({ database })
    directReader = (sql) => {
      if (!driver.idle) return undefined
      const statement = database.prepareIdle(sql)
      return statement.reader ? statement : undefined
    }
  } else if (parsed.dialect === 'postgres') {
    const { default: pg } = await import('pg')
    const pool = new pg.Pool({
      host: parsed.host,
      port: parsed.port,
      user: parsed.user,
      password: parsed.password,
      database: parsed.database,
      max: poolSize,
      ...(readOnly ? { options: '-c default_transaction_read_only=on' } : {}),
    })
    // An idle client losing its connection must not crash the process; the pool replaces it.
    pool.on('error', () => {})
    // Nor may a checked-out one: pg emits 'error' on it besides failing its query, which is enough.
    pool.on('connect', (client) => client.on('error', () => {}))
    dialect = new PostgresDialect({ pool })
  } else {
    // The default export: the bundle (docs/build.md) gives a CommonJS package no named ones.
    const { default: mysql } = await import('mysql2')
    const hosts = parsed.hosts ?? [{ host: parsed.host!, port: parsed.port! }]
    const pool = createMysqlPool(hosts, ({ host, port }) =>
      mysql.createPool({
        host,
        port,
        user: parsed.user,
        password: parsed.password,
        database: parsed.database,
        connectionLimit: poolSize,
        charset: 'utf8mb4_bin',
      }),
    )
    dialect = new MysqlDialect({
      pool,
      ...(readOnly
        ? {
            onCreateConnection: async (connection) =>
              void (await connection.executeQuery(
                CompiledQuery.raw('SET SESSION TRANSACTION READ ONLY'),
              )),
          }
        : {}),
    })
  }
  const db = new Kysely<Database>({ dialect, ...(options.log ? { log: options.log } : {}) })
  if (directReader && !options.log) directReaders.set(db, directReader)
  return {
    db,
    dialect: parsed.dialect,
    safeUrl: redactUrl(url),
    ...(backup ? { backup } : {}),
    close: () => db.destroy(),
  }
}
