/**
 * `GET /healthcheck` for load balancers: 200 `{"status":"ok"}` once a cheap read succeeds,
 * 503 `{"status":"unavailable"}` when the database does not answer (within two seconds).
 */
import type { FastifyInstance } from 'fastify'
import { getReportHash } from '../db/services.js'
import type { Db } from './types.js'

const TIMEOUT_MS = 2000

/** One indexed single-row read; any answer (even "no row") means the database is up. */
async function pingDatabase(db: Db): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${TIMEOUT_MS} ms`)), TIMEOUT_MS)
  })
  try {
    await Promise.race([getReportHash(db, '-healthcheck-'), timeout])
  } finally {
    clearTimeout(timer)
  }
}

export function healthcheckRoutes(app: FastifyInstance, db: Db): void {
  app.get('/healthcheck', async (request, reply) => {
    try {
      await pingDatabase(db)
      return { status: 'ok' }
    } catch (err) {
      request.log.warn({ err }, 'healthcheck: database unavailable')
      return reply.code(503).send({ status: 'unavailable', reason: 'database unavailable' })
    }
  })
}
