/**
 * The embedded server of bench/turnover.ts, in its own process: what `cyborg up` runs (SQLite file,
 * in-process bus, conductor, HTTP API) with its fake agent on the storm host and a real Placement.
 * The fake driver cleans released units with `clean` = CLEAN_POLICY (auto | none) and
 * `clean_delay_ms` = CLEAN_DELAY_MS, `[conductor] clean_placement_hold_ms` =
 * CLEAN_PLACEMENT_HOLD_MS when set; ALLOCATIONS = nova | standalone (below). Prints "ready <url>";
 * on SIGTERM prints "stats <json>": the
 * time each release spent `cleaning` (custody ledger: released_at → cleaned_at), Placement calls,
 * write transactions and event-loop lag.
 * Usage: turnover-embedded.ts <state dir> <port> <placement url>
 */
import { loadConfig } from '../../src/config/config.js'
import { createInProcessBus } from '../../src/bus/in-process-bus.js'
import { openConfiguredDatabase, migrateDatabase } from '../../src/main/database.js'
import { startCore } from '../../src/main/core.js'
import { startHttpApi } from '../../src/main/http.js'
import { createLogger } from '../../src/main/logger.js'
import { conductorOptions } from '../../src/main/resources.js'
import { createPlacementClient } from '../../src/openstack/placement.js'
import type { NovaClient } from '../../src/openstack/nova.js'
import { STORM_HOST, STORM_PROFILE } from '../../test/support/storm-inventory.js'
import { eventLoopLag } from '../support/load.js'

const [stateDir, port, placementUrl] = process.argv.slice(2)
const config = loadConfig({
  files: [],
  env: {
    CYBORG_DEFAULT__STATE_PATH: stateDir!,
    CYBORG_API__PORT: port!,
    CYBORG_LOG_LEVEL: 'error',
    ...(process.env.CLEAN_PLACEMENT_HOLD_MS === undefined
      ? {}
      : { CYBORG_CONDUCTOR__CLEAN_PLACEMENT_HOLD_MS: process.env.CLEAN_PLACEMENT_HOLD_MS }),
  },
})
const log = createLogger(config, { service: 'bench-turnover', env: { CYBORG_LOG_LEVEL: 'error' } })
const db = await openConfiguredDatabase(config)
await migrateDatabase(db)
const placementCalls: Record<string, number> = {}
const placement = createPlacementClient({
  endpoint: placementUrl!,
  token: 'admin',
  timeoutMs: 30_000,
  onCall: (method, p, status) => {
    const key = `${method} ${p.replace(/[0-9a-f-]{36}/g, '{uuid}').replace(/\?.*/, '')} ${status}`
    placementCalls[key] = (placementCalls[key] ?? 0) + 1
  },
})
const novaStandIn: NovaClient = {
  endpoint: 'http://nova.invalid',
  sendArqBoundEvents: async (events) => ({
    httpStatus: 200,
    attempts: 1,
    events: events.map((e) => ({ ...e, code: 200, outcome: 'delivered' as const })),
    ok: true,
  }),
}
const core = await startCore({
  db,
  bus: createInProcessBus(),
  log,
  conductor: conductorOptions(config),
  agent: {
    host: STORM_HOST,
    enabledDrivers: ['fake'],
    autoActivate: true,
    periodicIntervalMs: 3_600_000,
    driverOptions: {
      fake: {
        clean: process.env.CLEAN_POLICY ?? 'auto',
        clean_delay_ms: process.env.CLEAN_DELAY_MS ?? '0',
      },
    },
  },
  placement: { client: placement, createRootProvider: true },
  // ALLOCATIONS=nova: a Nova stand-in takes the bound events (Nova's scheduler allocates, so the
  // conductor writes no allocation); else standalone, the conductor allocates in Placement.
  ...(process.env.ALLOCATIONS === 'nova' ? { nova: novaStandIn } : {}),
})
await core.agent!.discoverNow()
await core.conductorClient.createDeviceProfile({
  name: STORM_PROFILE,
  description: null,
  groups: [{ 'resources:FPGA': '1' }],
})
const api = await startHttpApi(config, { db, conductor: core.conductorClient, log })
for (const k of Object.keys(placementCalls)) delete placementCalls[k]
const lag = eventLoopLag()
process.stdout.write(`ready ${api.url}\n`)

/** p50 and p99 of the time each release spent cleaning, from the custody ledger. */
async function timeInCleaning() {
  const rows = await db.db
    .selectFrom('custody_records as a')
    .innerJoin('custody_records as k', 'k.allocation_uuid', 'a.uuid')
    .select(['a.released_at', 'k.cleaned_at'])
    .where('a.kind', '=', 'allocation')
    .where('k.kind', '=', 'clean')
    .execute()
  const ms = rows
    .map((r) => Date.parse(r.cleaned_at!) - Date.parse(r.released_at!))
    .sort((a, b) => a - b)
  const at = (q: number) =>
    ms.length ? ms[Math.min(ms.length - 1, Math.ceil(q * ms.length) - 1)] : null
  const left = await db.db
    .selectFrom('attach_handles')
    .select('id')
    .where('clean_state', 'is not', null)
    .execute()
  return {
    releases: ms.length,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    maxMs: at(1),
    leftCleaning: left.length,
  }
}

process.on('SIGTERM', () => {
  const eventLoop = lag()
  void api.app
    .close()
    .then(() => core.conductor!.cleaningIdle())
    .then(async () => {
      const stats = {
        timeInCleaning: await timeInCleaning(),
        placementCalls,
        conductor: core.conductor?.stats(),
        eventLoopLag: eventLoop,
      }
      process.stdout.write(`stats ${JSON.stringify(stats)}\n`)
    })
    .then(() => core.stop())
    .then(() => db.close())
    .then(() => process.exit(0))
})
