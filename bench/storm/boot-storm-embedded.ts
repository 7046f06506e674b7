/**
 * The embedded server of bench/boot-storm.ts, in its own process: what `cyborg up` runs (SQLite
 * file, in-process bus, conductor, HTTP API), with the storm host reported in place of the fake
 * agent. Released units are cleaned before reuse (issue 18) by the storm host's stand-in agent
 * (bench/storm/storm-clean-agent.ts, fake clean of STORM_CLEAN_DELAY_MS, default 0) on the same bus;
 * STORM_CLEANING=0 starts the conductor with `cleaning: false` instead (units go straight back),
 * the baseline. Prints "ready <url>" on stdout. Usage: boot-storm-embedded.ts <state dir> <port>
 */
import { loadConfig } from '../../src/config/config.js'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import { openConfiguredDatabase, migrateDatabase } from '../../src/main/database.js'
import { startCore } from '../../src/main/core.js'
import { startHttpApi } from '../../src/main/http.js'
import { createLogger } from '../../src/main/logger.js'
import { createPrometheusMetrics } from '../../src/main/metrics/prometheus.js'
import { conductorOptions } from '../../src/main/resources.js'
import { seedStorm } from '../../test/support/storm-inventory.js'
import { serveStormCleanAgent } from './storm-clean-agent.js'
import { eventLoopLag } from '../support/load.js'

const [stateDir, port] = process.argv.slice(2)
const cleaning = process.env.STORM_CLEANING !== '0'
const config = loadConfig({
  files: [],
  env: {
    CYBORG_DEFAULT__STATE_PATH: stateDir!,
    CYBORG_API__PORT: port!,
    CYBORG_LOG_LEVEL: 'warn',
    // The storm host is seeded without an agent: no heartbeat keeps its lease, so give it a day.
    CYBORG_DEFAULT__SERVICE_DOWN_TIME: '86400',
    ...(process.env.STORM_SAVE_INTERVAL_MS
      ? { CYBORG_CONDUCTOR__SAVE_INTERVAL_MS: process.env.STORM_SAVE_INTERVAL_MS }
      : {}),
    // bench/webhook-failure.ts sets [webhooks] options this way.
    ...Object.fromEntries(
      Object.entries(process.env).filter(([k]) => k.startsWith('CYBORG_WEBHOOKS__')),
    ),
  },
})
const log = createLogger(config, { service: 'bench-embedded', env: { CYBORG_LOG_LEVEL: 'warn' } })
const db = await openConfiguredDatabase(config)
await migrateDatabase(db)
const bus = createInProcessBus()
const agent = cleaning
  ? await serveStormCleanAgent(bus, {
      cleanDelayMs: Number(process.env.STORM_CLEAN_DELAY_MS ?? 0),
      log,
    })
  : undefined
const core = await startCore({
  db,
  bus,
  log,
  conductor: { ...conductorOptions(config), ...(cleaning ? {} : { cleaning: false }) },
  agent: false,
})
await seedStorm(core.conductorClient)
// STORM_METRICS=1 (bench/webhook-failure.ts): GET /metrics with the process metrics, as `cyborg up` has.
const metrics = process.env.STORM_METRICS === '1' ? { metrics: createPrometheusMetrics() } : {}
const api = await startHttpApi(config, { db, conductor: core.conductorClient, log, ...metrics })
const lag = eventLoopLag()
process.stdout.write(`ready ${api.url}\n`)
process.on('SIGTERM', () => {
  void api.app
    .close()
    .then(() => core.stop())
    .then(() => agent?.stop())
    .then(() => {
      // Write transactions (batches) and writes of the whole run, and the cleans answered.
      const stats = {
        cleaning,
        conductor: core.conductor?.stats(),
        cleans: agent?.stats(),
        eventLoopLag: lag(),
      }
      process.stderr.write(`storm embedded: ${JSON.stringify(stats)}\n`)
    })
    .then(() => db.close())
    .then(() => process.exit(0))
})
