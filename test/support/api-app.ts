/**
 * Test support for the API's own (framework-level) tests: an app over a fresh SQLite database and
 * a conductor stub, with the log lines captured. Tests that need a real conductor live in test/api/.
 */
import assert from 'node:assert/strict'
import pino from 'pino'
import type { FastifyInstance } from 'fastify'
import { testDialects, type TestDatabase } from './db.js'
import type { ConductorRpc } from '../../src/rpc/conductor-rpc.js'
import { createApp } from '../../src/api/app.js'
import type { ApiOptions } from '../../src/api/types.js'

export interface TestApp {
  app: FastifyInstance
  db: TestDatabase
  /** Every log line written so far, parsed. */
  logs: Record<string, unknown>[]
  close(): Promise<void>
}

/** A conductor whose every method rejects with a plain Error (a bug, so a 500 if reached). */
export function throwingConductor(): ConductorRpc {
  return new Proxy({} as ConductorRpc, {
    get: (_t, method) => async () => {
      throw new Error(`conductor stub: ${String(method)} was not expected`)
    },
  })
}

export async function createTestApp(
  options: ApiOptions = {},
  conductor: ConductorRpc = throwingConductor(),
): Promise<TestApp> {
  const [sqlite] = await testDialects()
  const db = await sqlite!.create()
  const logs: Record<string, unknown>[] = []
  const log = pino(
    { level: 'info' },
    { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) },
  )
  const app = await createApp({ db: db.db, conductor, log }, options)
  return {
    app,
    db,
    logs,
    async close() {
      await app.close()
      await db.close()
    },
  }
}

/**
 * The fault of a compat-v2 error body, and checks the body's shape on the way: `error_message` an
 * object (OpenStack Cyborg 17.0.0, what every client but python-cyborgclient's own gets), or with
 * `shape: 'string'` its JSON text (≤ 16.x, src/api/errors.ts).
 */
export function faultOf(
  body: string,
  shape: 'object' | 'string' = 'object',
): { faultcode: string; faultstring: string; debuginfo: null } {
  const { error_message: inner } = JSON.parse(body) as { error_message: unknown }
  assert.equal(
    typeof inner,
    shape,
    `error_message should be a${shape === 'object' ? 'n' : ''} ${shape}: ${body}`,
  )
  return (typeof inner === 'string' ? JSON.parse(inner) : inner) as {
    faultcode: string
    faultstring: string
    debuginfo: null
  }
}
