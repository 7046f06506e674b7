/**
 * Fresh databases for tests, one per call, on every dialect that can run here:
 * SQLite always; PostgreSQL (127.0.0.1:5432) and MariaDB (127.0.0.1:3306) when reachable.
 * With CYBORG_REQUIRE_SERVICES=1 (CI) an unreachable server is an error, not a skip.
 * CYBORG_TEST_POSTGRES_URL / CYBORG_TEST_MYSQL_URL point at other servers (their database part is ignored).
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { createConnection } from 'mysql2/promise'
import {
  openDatabase,
  parseConnectionUrl,
  type DatabaseHandle,
  type DialectName,
} from '../../src/db/core/connection.js'
import { migrateToLatest } from '../../src/db/core/migrate.js'
import { errorMessage } from '../../src/domain/error-message.js'

export const POSTGRES_URL =
  process.env.CYBORG_TEST_POSTGRES_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres'
export const MYSQL_URL = process.env.CYBORG_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/mysql'
export const servicesRequired = process.env.CYBORG_REQUIRE_SERVICES === '1'

export interface TestDatabase extends DatabaseHandle {
  /** A connection URL for the fresh database, e.g. to hand to another process. */
  url: string
}

export interface TestDialect {
  name: DialectName
  /** Why this dialect cannot run here; undefined when it can. */
  skip: string | undefined
  /** A new, empty, migrated database; `close()` drops it. */
  create(): Promise<TestDatabase>
}

const uniqueName = () => `cyborg_t_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`

function withDatabase(url: string, name: string): string {
  return url.replace(/\/[^/?]*(\?.*)?$/, `/${name}$1`).replace(/undefined$/, '')
}

async function postgresAdmin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const p = parseConnectionUrl(POSTGRES_URL)
  const client = new pg.Client({
    host: p.host,
    port: p.port,
    user: p.user,
    password: p.password,
    database: p.database,
  })
  await client.connect()
  try {
    return await fn(client)
  } finally {
    await client.end()
  }
}

async function mysqlAdmin<T>(
  fn: (c: Awaited<ReturnType<typeof createConnection>>) => Promise<T>,
): Promise<T> {
  const p = parseConnectionUrl(MYSQL_URL)
  const conn = await createConnection({
    host: p.host,
    port: p.port,
    user: p.user,
    password: p.password,
  })
  try {
    return await fn(conn)
  } finally {
    await conn.end()
  }
}

async function probe(fn: () => Promise<unknown>): Promise<string | undefined> {
  try {
    await fn()
    return undefined
  } catch (err) {
    return errorMessage(err)
  }
}

async function migrated(url: string, drop: () => Promise<void>): Promise<TestDatabase> {
  const handle = await openDatabase(url, { poolSize: 4 })
  await migrateToLatest(handle)
  return {
    ...handle,
    url,
    close: async () => {
      await handle.close()
      await drop()
    },
  }
}

let cached: Promise<TestDialect[]> | undefined

/** The dialects to test against; fails (under CYBORG_REQUIRE_SERVICES=1) when a server is down. */
export function testDialects(): Promise<TestDialect[]> {
  cached ??= discover()
  return cached
}

async function discover(): Promise<TestDialect[]> {
  const [pgSkip, mySkip] = await Promise.all([
    probe(() => postgresAdmin((c) => c.query('select 1'))),
    probe(() => mysqlAdmin((c) => c.query('select 1'))),
  ])
  if (servicesRequired && (pgSkip || mySkip)) {
    throw new Error(
      `CYBORG_REQUIRE_SERVICES=1 but a database is unreachable: ` +
        `${[pgSkip && `PostgreSQL: ${pgSkip}`, mySkip && `MariaDB: ${mySkip}`].filter(Boolean).join('; ')}`,
    )
  }
  return [
    {
      name: 'sqlite',
      skip: undefined,
      create: () => migrated('sqlite://', async () => {}),
    },
    {
      name: 'postgres',
      skip: pgSkip && `PostgreSQL unreachable at ${POSTGRES_URL}: ${pgSkip}`,
      async create() {
        const name = uniqueName()
        await postgresAdmin((c) => c.query(`CREATE DATABASE ${name}`))
        return migrated(withDatabase(POSTGRES_URL, name), () =>
          postgresAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(
            () => {},
          ),
        )
      },
    },
    {
      name: 'mysql',
      skip: mySkip && `MariaDB unreachable at ${MYSQL_URL}: ${mySkip}`,
      async create() {
        const name = uniqueName()
        await mysqlAdmin((c) =>
          c.query(`CREATE DATABASE ${name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`),
        )
        return migrated(withDatabase(MYSQL_URL, name), () =>
          mysqlAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${name}`)).then(() => {}),
        )
      },
    },
  ]
}
