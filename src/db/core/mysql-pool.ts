/**
 * The MariaDB/MySQL pool under Kysely: one mysql2 pool per host of the URL, used in order (docs/deploy.md,
 * "Galera"). All connections go to the first host that answers and stay there, as behind HAProxy in
 * active/backup mode, so that a Galera cluster sees one writer and few certification failures; when
 * that host cannot be reached (or is a Galera node not ready for clients), new connections go to the
 * next one, and stay there until it fails in turn. A single-host URL (a proxy, a VIP) is one pool.
 *
 * Each new connection learns whether it talks to a Galera node (`wsrep_on` with a provider); if so it
 * refuses a node that is not ready (`wsrep_ready` OFF: every statement would fail with 1047) and sets
 * `wsrep_sync_wait` so that reads (SELECT, SHOW, BEGIN) first wait for the node to apply every
 * write the cluster committed before them: a read on any node sees what a conductor acknowledged.
 */
import type { MysqlPool, MysqlPoolConnection } from 'kysely'

/** A host of the URL. */
export interface MysqlHost {
  host: string
  port: number
}

/** What every host's pool takes (the user, database, pool size, …), as mysql2's createPool does. */
export type MysqlPoolFactory = (host: MysqlHost) => MysqlPool

/**
 * Bits of `wsrep_sync_wait` every Galera session gets, ORed into the server's global value (an
 * operator may ask for more there): 1 = reads, SHOW and BEGIN.
 */
export const GALERA_SYNC_WAIT = 1

/** mysql2's errors for a host that cannot be reached or dropped the connection. */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'PROTOCOL_CONNECTION_LOST',
  'NOT_READY',
])

/** True when `err` says the host is unusable, so that the next host should be tried. */
export function isUnreachable(err: unknown): boolean {
  const { code, errno, fatal } = (err ?? {}) as { code?: unknown; errno?: unknown; fatal?: unknown }
  if (typeof code === 'string' && UNREACHABLE.has(code)) return true
  // mysql2 marks an error that ended the connection `fatal`; a command on a connection that died
  // before it (a killed node) fails with one that has no code: "Can't add new command when
  // connection is in closed state". Nothing of it reached the server.
  return errno === 1047 || (fatal === true && code === undefined)
}

type Row = Record<string, unknown>

function query(conn: MysqlPoolConnection, text: string): Promise<Row[]> {
  return new Promise((resolve, reject) =>
    conn.query(text, [], (err, rows) => (err ? reject(err) : resolve(rows as Row[]))),
  )
}

/** The error of a Galera node that is not ready, shaped as the server's own (errno 1047). */
function notReady(host: MysqlHost): Error {
  return Object.assign(
    new Error(`Galera node ${host.host}:${host.port} is not ready (wsrep_ready = OFF)`),
    { code: 'NOT_READY', errno: 1047 },
  )
}

let galeraSeen = false

/**
 * Whether this process has connected to a Galera node. Writes spread their choices then (the
 * handle claim of src/db/attach-handles.ts): row locks are node-local there, so two writers on two
 * nodes that pick the same row both go ahead, and one fails at COMMIT.
 */
export const onGalera = (): boolean => galeraSeen

/** Galera detection and session settings of a new connection; rejects when the node is not ready. */
async function prepareSession(conn: MysqlPoolConnection, host: MysqlHost): Promise<void> {
  const vars = await query(
    conn,
    "SHOW VARIABLES WHERE Variable_name IN ('wsrep_on', 'wsrep_provider')",
  )
  const value = (name: string) => vars.find((r) => r['Variable_name'] === name)?.['Value']
  if (value('wsrep_on') !== 'ON' || value('wsrep_provider') === 'none') return
  const ready = await query(conn, "SHOW STATUS LIKE 'wsrep_ready'")
  if (ready[0]?.['Value'] !== 'ON') throw notReady(host)
  galeraSeen = true
  await query(conn, `SET SESSION wsrep_sync_wait = @@global.wsrep_sync_wait | ${GALERA_SYNC_WAIT}`)
}

/**
 * `conn` as handed to Kysely: a connection that met an unusable host (lost, or a Galera node that
 * stopped being ready: 1047) is destroyed on release instead of going back to the pool, and
 * `onUnusable` moves new connections on to the next host.
 */
function watched(conn: MysqlPoolConnection, onUnusable: () => void): MysqlPoolConnection {
  let unusable = false
  return {
    get config() {
      return conn.config
    },
    get threadId() {
      return conn.threadId
    },
    connect: (callback) => conn.connect(callback),
    destroy: () => conn.destroy(),
    query: ((text: string, parameters: unknown, callback?: (e: unknown, r: unknown) => void) => {
      if (!callback) return conn.query(text, parameters)
      return conn.query(text, parameters, (err, result) => {
        if (err && isUnreachable(err)) {
          unusable = true
          onUnusable()
        }
        callback(err, result)
      })
    }) as MysqlPoolConnection['query'],
    release: () => (unusable ? conn.destroy() : conn.release()),
  }
}

/** A pool over `hosts` in order, for Kysely's MysqlDialect. */
export function createMysqlPool(hosts: readonly MysqlHost[], factory: MysqlPoolFactory): MysqlPool {
  const pools = hosts.map(factory)
  /** Connections whose session is set up (mysql2 hands the same object back after release). */
  const prepared = new WeakMap<MysqlPoolConnection, MysqlPoolConnection>()
  /** The host new connections go to: the last one that answered. */
  let current = 0

  const fromHost = (i: number): Promise<MysqlPoolConnection> =>
    new Promise((resolve, reject) =>
      pools[i]!.getConnection((err, conn) => {
        if (err) return reject(err as Error)
        const known = prepared.get(conn)
        if (known) return resolve(known)
        prepareSession(conn, hosts[i]!).then(
          () => {
            const wrapped = watched(conn, () => {
              if (current === i) current = (i + 1) % pools.length
            })
            prepared.set(conn, wrapped)
            resolve(wrapped)
          },
          (e: unknown) => {
            conn.destroy() // a broken or refused session must not go back to the pool
            reject(e as Error)
          },
        )
      }),
    )

  const acquire = async (): Promise<MysqlPoolConnection> => {
    let lastErr: unknown
    for (let tried = 0; tried < pools.length; tried++) {
      const i = (current + tried) % pools.length
      try {
        const conn = await fromHost(i)
        current = i
        return conn
      } catch (err) {
        if (!isUnreachable(err)) throw err
        lastErr = err
      }
    }
    throw lastErr
  }

  return {
    getConnection(callback) {
      acquire().then(
        (conn) => callback(null, conn),
        (err: unknown) => callback(err, undefined as unknown as MysqlPoolConnection),
      )
    },
    end(callback) {
      let left = pools.length
      let firstErr: unknown = null
      for (const pool of pools)
        pool.end((err) => {
          firstErr ??= err
          if (--left === 0) callback(firstErr)
        })
    },
  }
}
