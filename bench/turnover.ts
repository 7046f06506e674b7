/**
 * Turnover with real Placement (issue 28): Nova-style bind cycles (GET the profile, POST an ARQ,
 * PATCH bind, poll until resolved, DELETE by instance; bench/storm/boot-storm-client.ts) against the
 * embedded server (bench/shape/turnover-embedded.ts: `cyborg up`'s composition, its fake agent, a real
 * Placement from scripts/placement.sh), at each level of binds in flight, for each cleaning
 * setting: `clean = none`, and `clean = auto` with the fake clean taking 0 and 50 ms. A fresh
 * server per run; one Placement for all. Prints one JSON document: per run, cycles/s, BindFailed,
 * time in `cleaning` p50/p99 (custody ledger), Placement calls per cycle, event-loop lag; and per
 * level, the ratio of each cleaning run's cycles/s to the `clean = none` run's (goal ≥ 0.9).
 * `--allocations`: `nova`, Nova's scheduler allocates (a stand-in takes the bound events; the
 * conductor writes no allocation), and/or `standalone`, the conductor allocates in Placement (four
 * Placement calls per cycle). Cycles whose bind failed still count as cycles (they delete too).
 * `--shapes production` (on by default, beside `embedded`): the production shape (bench/shape/:
 * `cyborg api`, `conductor` and `agent` over RabbitMQ and MariaDB, Placement behind a counting
 * proxy, a Nova stand-in), one set of processes per setting loaded at every level; its JSON under
 * `production` adds per cycle (= per release) each process's CPU ms, MariaDB statements and commits
 * (`SHOW GLOBAL STATUS` deltas) and RSS. `--baseline <checkout>` also runs another checkout's code
 * there first, as the `clean = none` equivalent (`git worktree add ../old 34807ec && (cd ../old &&
 * npm ci)`, then `--baseline ../old`), and `cleanNoneOverBaseline` is main's over its (goal ≥ 1).
 * `--settings` picks the embedded runs' settings; `clean-50ms-nohold` adds the 50 ms clean without
 * Placement's cleaning hold (docs/cleaning.md, "The hold"), to show what the hold saves.
 * Usage: npm run bench:turnover [-- --seconds 5 --levels 2,8,64 --rounds 1
 *   --allocations nova,standalone --shapes embedded,production --baseline ../old
 *   --settings clean-none,clean-0ms,clean-50ms,clean-50ms-nohold]
 */
import { loadavg } from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { STORM_HOST } from '../test/support/storm-inventory.js'
import { startPlacement } from '../test/support/peers/placement.js'
import { settled, storm } from './storm/boot-storm-client.js'
import { startEmbeddedServer as startServer } from './shape/embedded.js'
import { productionTurnover } from './shape/turnover-production.js'
import { pidsOf, sampleProcess } from './shape/measure.js'

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    levels: { type: 'string', default: '2,8,64' },
    rounds: { type: 'string', default: '1' },
    allocations: { type: 'string', default: 'nova,standalone' },
    shapes: { type: 'string', default: 'embedded,production' },
    baseline: { type: 'string' },
    settings: { type: 'string', default: 'clean-none,clean-0ms,clean-50ms' },
  },
})
const shapeList = values.shapes.split(',')
const seconds = Number(values.seconds)
const levels = values.levels.split(',').map(Number)
/** Who allocates in Placement: Nova's scheduler (a stand-in takes the bound events), or the conductor. */
const shapes = shapeList.includes('embedded') ? values.allocations.split(',') : []
/** `clean-50ms-nohold`: the 50 ms clean with Placement's cleaning hold off (`clean_placement_hold_ms = 0`). */
const ALL_SETTINGS = [
  { name: 'clean-none', policy: 'none', delayMs: 0 },
  { name: 'clean-0ms', policy: 'auto', delayMs: 0 },
  { name: 'clean-50ms', policy: 'auto', delayMs: 50 },
  { name: 'clean-50ms-nohold', policy: 'auto', delayMs: 50, holdMs: 0 },
] as const
const SETTINGS: readonly (typeof ALL_SETTINGS)[number][] = values.settings
  .split(',')
  .map((name) => {
    const s = ALL_SETTINGS.find((x) => x.name === name)
    if (!s)
      throw new Error(`--settings: unknown ${name} (${ALL_SETTINGS.map((x) => x.name).join(', ')})`)
    return s
  })

const loadAtStart = loadavg()[0]
const placement = await startPlacement()
const runs: Record<string, unknown>[] = []
let production: Awaited<ReturnType<typeof productionTurnover>> | null = null
try {
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const [allocations, level] of shapes.flatMap((a) => levels.map((l) => [a, l] as const))) {
      const order = round % 2 === 0 ? SETTINGS : [...SETTINGS].reverse()
      for (const s of order) {
        const holdMs = 'holdMs' in s ? s.holdMs : undefined
        const server = await startServer(placement.url, s.policy, s.delayMs, allocations, holdMs)
        const placementPids = pidsOf(
          new RegExp(`uwsgi.*http-socket.${new URL(placement.url).host}`),
        )
        const cpuMs = () => ({
          server: sampleProcess(server.pid).cpuMs,
          placement: placementPids.reduce((a, pid) => a + sampleProcess(pid).cpuMs, 0),
        })
        const cpuBefore = cpuMs()
        const result = await storm(server.url, level, server.rps, seconds)
        const cpuAfter = cpuMs()
        const after = await settled(server.url)
        const stats = (await server.stop()) as {
          placementCalls: Record<string, number>
        } & Record<string, unknown>
        const calls = Object.values(stats?.placementCalls ?? {}).reduce((a, b) => a + b, 0)
        const bindFailed = Object.entries(result.errors)
          .filter(([k]) => k.includes('BindFailed'))
          .reduce((n, [, v]) => n + v, 0)
        runs.push({
          round,
          allocations,
          setting: s.name,
          inFlight: level,
          cyclesPerSecond: result.cyclesPerSecond,
          cycles: result.cycles,
          bindFailed,
          errors: result.errors,
          doubleAllocations: result.doubleAllocations,
          cycleMs: result.ms.cycle,
          stepMs: result.ms,
          cpuMsPerCycle: result.cycles
            ? {
                server:
                  Math.round(((cpuAfter.server - cpuBefore.server) / result.cycles) * 100) / 100,
                placement:
                  Math.round(((cpuAfter.placement - cpuBefore.placement) / result.cycles) * 100) /
                  100,
              }
            : null,
          settled: after,
          placementCallsPerCycle: result.cycles
            ? Math.round((calls / result.cycles) * 10) / 10
            : null,
          ...stats,
        })
        process.stderr.write(
          `turnover ${allocations} ${s.name} ${level} in flight: ${result.cyclesPerSecond} cycles/s, ${bindFailed} BindFailed\n`,
        )
      }
    }
  }
  if (shapeList.includes('production'))
    production = await productionTurnover({
      placementUrl: placement.url,
      levels,
      seconds,
      rounds: Number(values.rounds),
      baselineRoot: values.baseline === undefined ? undefined : path.resolve(values.baseline),
    })
} finally {
  await placement.stop()
}

/** Per shape and level: each cleaning setting's cycles/s over `clean = none`'s (mean over rounds). */
const mean = (allocations: string, setting: string, level: number) => {
  const xs = runs.filter(
    (r) => r.allocations === allocations && r.setting === setting && r.inFlight === level,
  )
  return xs.reduce((a, r) => a + (r.cyclesPerSecond as number), 0) / (xs.length || 1)
}
const ratios = Object.fromEntries(
  shapes.map((a) => [
    a,
    Object.fromEntries(
      levels.map((level) => [
        level,
        Object.fromEntries(
          SETTINGS.filter((s) => s.name !== 'clean-none').map((s) => [
            s.name,
            Math.round((mean(a, s.name, level) / (mean(a, 'clean-none', level) || 1)) * 100) / 100,
          ]),
        ),
      ]),
    ),
  ]),
)
process.stdout.write(
  `${JSON.stringify(
    {
      host: STORM_HOST,
      units: 16,
      seconds,
      machine: {
        cpus: (await import('node:os')).cpus().length,
        loadAtStart,
        loadAtEnd: loadavg()[0],
      },
      ratioToCleanNone: ratios,
      runs,
      production,
    },
    null,
    2,
  )}\n`,
)
