/**
 * Write throughput of the conductor: N device-profile creations through the in-process bus with
 * `concurrency` in flight, with group commit (max_batch 64) against one transaction per write
 * (max_batch 1), on every database reachable here. Prints one JSON document.
 * Usage: node --import tsx bench/conductor-write.ts [--writes 2000] [--concurrency 64]
 */
import { parseArgs } from 'node:util'
import { cpus } from 'node:os'
import { testDialects, type TestDialect } from '../test/support/db.js'
import { createInProcessBus } from '../src/bus/in-process-bus.js'
import { startCore } from '../src/main/core.js'
import { noopLogger } from '../src/domain/logger.js'
import { eventLoopLag } from './support/load.js'

const { values } = parseArgs({
  options: {
    writes: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '64' },
  },
})
const writes = Number(values.writes)
const concurrency = Number(values.concurrency)

async function measure(dialect: TestDialect, maxBatch: number, saveIntervalMs: number) {
  const db = await dialect.create()
  const bus = createInProcessBus()
  const core = await startCore({
    db,
    bus,
    log: noopLogger,
    conductor: { maxBatch, saveIntervalMs },
    agent: false,
  })
  try {
    let next = 0
    const started = process.hrtime.bigint()
    const worker = async () => {
      while (next < writes) {
        const i = next++
        await core.conductorClient.createDeviceProfile({
          name: `bench-${i}`,
          description: null,
          groups: [{ 'resources:FPGA': '1' }],
        })
      }
    }
    await Promise.all(Array.from({ length: concurrency }, worker))
    const seconds = Number(process.hrtime.bigint() - started) / 1e9
    const stats = core.conductor!.stats()
    return {
      writesPerSec: Math.round(writes / seconds),
      transactions: stats.batches,
      writes: stats.ops,
    }
  } finally {
    await core.stop()
    await bus.close()
    await db.close()
  }
}

const results: Record<string, unknown> = {}
const lag = eventLoopLag()
for (const dialect of await testDialects()) {
  if (dialect.skip) {
    results[dialect.name] = { skipped: dialect.skip }
    continue
  }
  const perWrite = await measure(dialect, 1, 0)
  const grouped = await measure(dialect, 64, 2)
  results[dialect.name] = {
    oneTransactionPerWrite: perWrite,
    groupCommit: grouped,
    speedup: Math.round((grouped.writesPerSec / perWrite.writesPerSec) * 100) / 100,
  }
}
process.stdout.write(
  JSON.stringify(
    {
      benchmark: 'conductor-write',
      date: new Date().toISOString(),
      machine: { cpus: cpus().length, node: process.version },
      settings: { writes, concurrency },
      results,
      eventLoopLag: { benchmarkProcess: lag(), services: 'embedded: the benchmark process' },
    },
    null,
    2,
  ) + '\n',
)
