/**
 * A private 3-node Galera cluster for one test file (scripts/galera.sh, into a temp directory), and
 * fresh migrated databases on it. Without root or Debian's mariadb-server + galera-4 the tests skip,
 * unless CYBORG_REQUIRE_SERVICES=1 (CI), where that is an error. With CYBORG_GALERA_DIR, the cluster
 * of that directory is used (started there if it is not up) and left running, for quicker reruns.
 */
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { randomBytes } from 'node:crypto'
import { createConnection } from 'mysql2/promise'
import { openDatabase, type DatabaseHandle } from '../../src/db/core/connection.js'
import { migrateToLatest } from '../../src/db/core/migrate.js'

const run = promisify(execFile)
const SCRIPT = path.resolve(import.meta.dirname, '../../scripts/galera.sh')

/** SQL port of node N (scripts/galera.sh). */
export const sqlPort = (n: number) => 3400 + n

/** Why the cluster cannot run here, or undefined. Throws instead under CYBORG_REQUIRE_SERVICES=1. */
export function galeraSkip(): string | undefined {
  const why =
    process.getuid?.() !== 0
      ? 'scripts/galera.sh needs root'
      : !existsSync('/usr/lib/galera/libgalera_smm.so') || !existsSync('/usr/sbin/mariadbd')
        ? 'mariadb-server and galera-4 are not installed'
        : undefined
  if (why && process.env.CYBORG_REQUIRE_SERVICES === '1')
    throw new Error(`CYBORG_REQUIRE_SERVICES=1 but the Galera cluster cannot start: ${why}`)
  return why
}

export interface GaleraCluster {
  dir: string
  /** Seconds `galera.sh up` took. */
  startSeconds: number
  /** A new database `name` on the cluster (created through node 1, migrated); the URL of node n. */
  url(n: number, database: string): string
  /** Creates and migrates a fresh database; returns its name. */
  createDatabase(): Promise<string>
  /** Opens the database through node n (a fresh pool). */
  open(n: number, database: string, poolSize?: number): Promise<DatabaseHandle>
  /** Runs `scripts/galera.sh ACTION DIR [N]`. */
  script(action: string, n?: number): Promise<string>
  down(): Promise<void>
}

export async function startGalera(): Promise<GaleraCluster> {
  const kept = process.env.CYBORG_GALERA_DIR
  const dir = kept || mkdtempSync(path.join(tmpdir(), 'cyborg-galera-'))
  const script = async (action: string, n?: number) =>
    (
      await run(SCRIPT, [action, dir, ...(n === undefined ? [] : [String(n)])], {
        timeout: 300_000,
      })
    ).stdout
  const started = performance.now()
  try {
    await script('up')
  } catch (err) {
    if (!kept) {
      await script('down').catch(() => {})
      rmSync(dir, { recursive: true, force: true })
    }
    throw err
  }
  const startSeconds = (performance.now() - started) / 1000
  const url = (n: number, database: string) => `mysql://root@127.0.0.1:${sqlPort(n)}/${database}`
  return {
    dir,
    startSeconds,
    url,
    script,
    async createDatabase() {
      const name = `cyborg_g_${randomBytes(4).toString('hex')}`
      const conn = await createConnection({ host: '127.0.0.1', port: sqlPort(1), user: 'root' })
      try {
        await conn.query(`CREATE DATABASE ${name}`)
      } finally {
        await conn.end()
      }
      const handle = await openDatabase(url(1, name), { poolSize: 2 })
      try {
        await migrateToLatest(handle)
      } finally {
        await handle.close()
      }
      return name
    },
    open: (n, database, poolSize = 8) => openDatabase(url(n, database), { poolSize }),
    async down() {
      if (kept) return
      await script('down')
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
