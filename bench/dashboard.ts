/**
 * The dashboard at 1,000 hosts (issue 32; docs/performance.md, "The dashboard at 1,000 hosts"): a
 * fresh SQLite database filled with `--hosts` × `--per-host` devices through the conductor's own
 * ingestion (bench/support/explain-fleet.ts: PGPUs and FPGAs; some hosts inactive, maintaining,
 * with a failed device, or past their agent's lease), then `cyborg up` (the compiled build, as
 * bin/cyborg runs it) over it, and Debian's headless chromium (playwright-core) opening
 * /dashboard/fleet `--runs` times, each in a fresh browser context (cold: nothing cached), after
 * one unmeasured warm-up load. Each load is measured through the page's own performance API:
 * navigation timing (domInteractive, domContentLoaded, load), the `fleet-drawn` mark the page sets
 * once its data is drawn (what "interactive" means here: the operator can read and use the page),
 * transferred bytes, the JS heap and DOM nodes; with the API process's event-loop lag over the
 * load (its /metrics). Goal: interactive under 1 s. Also: /dashboard/devices' table rows after load
 * and after one scroll to the bottom (0: the page drew no table), and, side by
 * side, what the page read before (every device, `GET /v2/devices` at 2.6) against the summary
 * it reads now (`GET /v2/devices/summary` at 2.10): bytes and time. Prints one JSON document.
 * Usage: npm run bench:dashboard [-- --hosts 1000 --per-host 8 --runs 5 --screenshots DIR]
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { gzipSync } from 'node:zlib'
import { machineFacts, scrapeEventLoopLag, type LagFigures } from './support/load.js'
import { seedFleet } from './support/explain-fleet.js'
import {
  devicesTableRows,
  loadFleetPage,
  screenshots,
  type FleetLoad,
} from './support/dashboard-browser.js'
import { loadConfig } from '../src/config/config.js'
import { migrateDatabase, openConfiguredDatabase } from '../src/main/database.js'
import { chromiumSkip, launchChromium } from '../test/support/peers/chromium.js'
import { startService } from '../test/support/service.js'

const opt = (d: string) => ({ type: 'string' as const, default: d })
const { values } = parseArgs({
  options: {
    hosts: opt('1000'),
    'per-host': opt('8'),
    runs: opt('5'),
    /** Where to save screenshots of the Fleet page at this size ('' for none). */
    screenshots: opt(''),
  },
})
const hosts = Number(values.hosts)
const perHost = Number(values['per-host'])
const runs = Number(values.runs)
const GOAL_MS = 1000

const log = (s: string) => process.stderr.write(`${s}\n`)
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 ? s[mid]! : Math.round(((s[mid - 1]! + s[mid]!) / 2) * 10) / 10
}
const spread = (xs: number[]) => ({ median: median(xs), max: Math.max(...xs) })

/** Median and max of each numeric figure of the loads. */
function summarize(loads: FleetLoad[]) {
  const keys = [
    'domInteractiveMs',
    'domContentLoadedMs',
    'loadMs',
    'fleetDrawnMs',
    'transferredBytes',
    'jsHeapUsedBytes',
    'domNodes',
    'hostRows',
  ] as const
  return Object.fromEntries(keys.map((k) => [k, spread(loads.map((l) => Number(l[k] ?? NaN)))]))
}

/** `GET path` `n` times (`minor` 0: no microversion header, v1): body bytes (and gzipped, as a compressing proxy would send them) and ms. */
async function timedReads(url: string, p: string, minor: number, n: number) {
  const ms: number[] = []
  let bytes = 0
  let gzipped = 0
  let status = 0
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    const res = await fetch(`${url}${p}`, {
      headers: minor === 0 ? {} : { 'openstack-api-version': `accelerator 2.${minor}` },
    })
    const body = Buffer.from(await res.arrayBuffer())
    ms.push(Math.round((performance.now() - t0) * 10) / 10)
    status = res.status
    bytes = body.length
    gzipped = gzipSync(body).length
  }
  return {
    path: p,
    microversion: minor === 0 ? null : `2.${minor}`,
    status,
    bytes,
    gzippedBytes: gzipped,
    ms: spread(ms),
  }
}

const skip = await chromiumSkip()
if (skip !== undefined) {
  process.stdout.write(`${JSON.stringify({ bench: 'dashboard', skipped: skip })}\n`)
  process.exit(0)
}
const loadAtStart = loadavg()[0]!
const dir = await mkdtemp(path.join(tmpdir(), 'cyborg-bench-dashboard-'))
const dbUrl = `sqlite:///${path.join(dir, 'cyborg.sqlite')}`
try {
  log(`seeding ${hosts} hosts × ${perHost} devices into ${dbUrl}`)
  const db = await openConfiguredDatabase(
    loadConfig({ files: [], env: { CYBORG_DATABASE__CONNECTION: dbUrl } }),
  )
  await migrateDatabase(db)
  const seeded = await seedFleet(db.db, { hosts, perHost })
  await db.close()
  log(`seeded in ${seeded.setupSeconds} s; starting cyborg up`)
  const service = await startService({
    compiled: true,
    stateDir: dir,
    timeoutMs: 120_000,
    env: {
      CYBORG_DATABASE__CONNECTION: dbUrl,
      CYBORG_DEFAULT__HOST: 'bench-dashboard-up',
      CYBORG_AGENT__ENABLED_DRIVERS: 'fake',
      // Leases of a day: the seeded agents do not beat, and must not fall silent mid-run.
      CYBORG_DEFAULT__SERVICE_DOWN_TIME: '86400',
      CYBORG_METRICS__ENABLED: 'true',
      CYBORG_LOG_LEVEL: 'warn',
    },
  })
  const browser = await launchChromium()
  try {
    const metrics = `${service.url}/metrics`
    const fleetUrl = `${service.url}/dashboard/fleet`
    await loadFleetPage(browser, fleetUrl) // warm-up, not counted
    const loads: FleetLoad[] = []
    const lags: LagFigures[] = []
    for (let i = 0; i < runs; i++) {
      await scrapeEventLoopLag(metrics) // starts the API's lag window
      loads.push(await loadFleetPage(browser, fleetUrl))
      const lag = await scrapeEventLoopLag(metrics)
      if (lag !== null) lags.push(lag)
      log(`run ${i + 1}: drawn at ${loads.at(-1)!.fleetDrawnMs} ms`)
    }
    const figures = summarize(loads)
    if (values.screenshots !== '') await screenshots(browser, fleetUrl, values.screenshots)
    const devices = await devicesTableRows(browser, `${service.url}/dashboard/devices`)
    const oldRead = await timedReads(service.url, '/v2/devices', 6, runs)
    const newRead = await timedReads(service.url, '/v2/devices/summary', 10, runs)
    // The page's two other reads, alone (in the page the three share the API's event loop).
    const others = [
      await timedReads(service.url, '/v2/capacity?group_by=resource_class', 6, runs),
      await timedReads(service.url, '/v1/status', 0, runs),
    ]
    const out = {
      bench: 'dashboard',
      machine: machineFacts(loadAtStart),
      fleet: {
        hosts,
        perHost,
        rows: seeded.rows,
        hostsWith: seeded.hostsWith,
        seedSeconds: seeded.setupSeconds,
        database: 'sqlite (cyborg up)',
      },
      fleetPage: {
        runs,
        cold: 'a fresh browser context per run, after one unmeasured warm-up load',
        ...figures,
        apiCalls: loads.at(-1)!.calls,
        goal: {
          interactiveUnderMs: GOAL_MS,
          measuredAs: 'the fleet-drawn mark (data drawn), max of the runs',
          met: figures.fleetDrawnMs!.max < GOAL_MS,
        },
      },
      apiEventLoopLag:
        lags.length === 0
          ? 'serves no /metrics: not measured'
          : {
              p50Ms: spread(lags.map((l) => l.p50Ms)),
              p99Ms: spread(lags.map((l) => l.p99Ms)),
              maxMs: spread(lags.map((l) => l.maxMs)),
            },
      devicesPage: devices.built
        ? { rowsAfterLoad: devices.afterLoad, rowsAfterScroll: devices.afterScroll }
        : {
            rowsAfterLoad: 0,
            rowsAfterScroll: 0,
            note: 'the page drew no table',
          },
      oldVsNew: {
        everyDevice: oldRead,
        summary: newRead,
        bytesRatio: Math.round((oldRead.bytes / newRead.bytes) * 10) / 10,
      },
      otherReadsAlone: others,
    }
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`)
  } finally {
    await browser.close()
    await service.stop()
  }
} finally {
  await rm(dir, { recursive: true, force: true })
}
