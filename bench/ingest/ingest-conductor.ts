/**
 * Child process of bench/ingest.ts: one conductor (createConductor + serveConductor) on RabbitMQ
 * and PostgreSQL, alone in its process so that its CPU time is its own. It counts every statement
 * its pg clients send (pg.Client.prototype.query, so BEGIN/COMMIT/SAVEPOINT count too), split into
 * statements outside a transaction and inside one. Talks to the parent over IPC:
 * sends `{ ready: true }`; answers `'stats'` with `{ cpu, statements, batches, ops, rssMb }`;
 * on `'stop'` stops the conductor, closes everything and exits.
 * Usage (forked): ingest-conductor.ts <database url> <transport url> <save interval ms> <max batch> <pool size>
 */
import pg from 'pg'
import { openDatabase } from '../../src/db/core/connection.js'
import { createRabbitMqBus } from '../../src/bus/rabbitmq-bus.js'
import { createConductor } from '../../src/conductor/conductor.js'
import { serveConductor } from '../../src/rpc/conductor-rpc.js'
import { noopLogger } from '../../src/domain/logger.js'
import { systemClock } from '../../src/domain/time.js'

const [dbUrl, busUrl, saveIntervalMs = '10', maxBatch = '64', poolSize = '10'] =
  process.argv.slice(2)
if (!dbUrl || !busUrl || !process.send)
  throw new Error('fork me with <database url> <transport url> …')

type Counts = { total: number; byVerb: Record<string, number> }
const statements = {
  outsideTransaction: { total: 0, byVerb: {} } as Counts,
  inTransaction: { total: 0, byVerb: {} } as Counts,
}
const inTx = new WeakSet<object>()
const original = pg.Client.prototype.query as (...args: unknown[]) => unknown
pg.Client.prototype.query = function (this: object, ...args: unknown[]) {
  const config = args[0] as string | { text?: string } | undefined
  const text = (typeof config === 'string' ? config : (config?.text ?? ''))
    .trimStart()
    .toLowerCase()
  const verb = text.startsWith('rollback to')
    ? 'rollback to savepoint'
    : (text.split(/\s/, 1)[0] ?? '')
  if (verb === 'begin' || verb === 'start') inTx.add(this)
  const bucket = inTx.has(this) ? statements.inTransaction : statements.outsideTransaction
  bucket.total++
  bucket.byVerb[verb] = (bucket.byVerb[verb] ?? 0) + 1
  if (verb === 'commit' || verb === 'rollback') inTx.delete(this)
  return original.apply(this, args)
} as typeof pg.Client.prototype.query

const db = await openDatabase(dbUrl, { poolSize: Number(poolSize) })
const bus = await createRabbitMqBus({
  url: busUrl,
  log: noopLogger,
  connectionName: 'cyborg-bench-conductor',
})
const conductor = createConductor(
  { db, log: noopLogger, clock: systemClock },
  { saveIntervalMs: Number(saveIntervalMs), maxBatch: Number(maxBatch) },
)
const server = await serveConductor(bus, conductor)

process.on('message', (msg: unknown) => {
  if (msg === 'stats') {
    const { batches, ops } = conductor.stats()
    process.send!({
      cpu: process.cpuUsage(),
      statements,
      batches,
      ops,
      rssMb: Math.round(process.memoryUsage().rss / 1048576),
    })
  } else if (msg === 'stop') {
    void (async () => {
      await server.unsubscribe()
      await conductor.stop()
      await bus.close()
      await db.close()
      process.disconnect()
    })()
  }
})
process.send({ ready: true })
