/**
 * The embedded server of bench/boot-storm.ts, in its own process: what `cyborg up` runs (SQLite
 * file, in-process bus, conductor, HTTP API), with the storm host reported in place of the fake
 * agent. Prints "ready <url>" on stdout. Usage: boot-storm-embedded.ts <state dir> <port>
 */
import { loadConfig } from '../src/config/config.js'
import { createInProcessBus } from '../src/bus/in-process-bus.js'
import { openConfiguredDatabase, migrateDatabase } from '../src/main/database.js'
import { startCore } from '../src/main/core.js'
import { startHttpApi } from '../src/main/http.js'
import { createLogger } from '../src/main/logger.js'
import { conductorOptions } from '../src/main/resources.js'
import { seedStorm } from '../test/support/storm-inventory.js'

const [stateDir, port] = process.argv.slice(2)
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
  },
})
const log = createLogger(config, { service: 'bench-embedded', env: { CYBORG_LOG_LEVEL: 'warn' } })
const db = await openConfiguredDatabase(config)
await migrateDatabase(db)
const core = await startCore({
  db,
  bus: createInProcessBus(),
  log,
  conductor: conductorOptions(config),
  agent: false,
})
await seedStorm(core.conductorClient)
const api = await startHttpApi(config, { db, conductor: core.conductorClient, log })
process.stdout.write(`ready ${api.url}\n`)
process.on('SIGTERM', () => {
  void api.app
    .close()
    .then(() => core.stop())
    .then(() => db.close())
    .then(() => process.exit(0))
})
