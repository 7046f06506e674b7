/**
 * The production shape at its limit (issue 28 part 2.3). In one run: the production shape
 * (bench/shape/processes.ts: `cyborg api` with `[api] api_workers` 1 and then 2, `cyborg conductor`,
 * `cyborg agent` with the fake driver's 16 units, over RabbitMQ and MariaDB, real Placement behind a
 * counting proxy, a Nova stand-in taking the bound events) and the embedded mode
 * (bench/shape/turnover-embedded.ts: `cyborg up`'s composition on SQLite, with the same Placement and Nova
 * stand-in), cleaning and events on as shipped (fake clean, 0 ms), each loaded with Nova-style bind
 * cycles at every level of binds in flight. Prints one JSON document: per target and level,
 * cycles/s, cycle p50/p99, CPU ms per cycle of each process (/proc; an API's cluster workers count
 * with it) and of the shared services, MariaDB statements and commits per cycle (`SHOW GLOBAL
 * STATUS` deltas: server-wide, so other clients of the same MariaDB count too), Placement calls per
 * cycle, event-loop lag (each process's /metrics) and RSS; and the goals, met or not.
 * `--profile <dir>`: the shape's children run with `--cpu-prof` into <dir>/<target>/<process>, and
 * the JSON adds, per process, where its CPU went during the measured loads (self time by package
 * or source folder and by function, in total and per cycle over all levels; start-up excluded).
 * Usage: npm run bench:production-shape [-- --seconds 5 --levels 2,8,64
 *   --targets shape-1,shape-2,embedded --profile /tmp/prof]
 */
import { loadavg } from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { startPlacement } from '../test/support/peers/placement.js'
import { machineFacts } from './support/load.js'
import { startEmbeddedServer } from './shape/embedded.js'
import { measureLevel, type LevelFigures, type Target } from './shape/level.js'
import { startShape } from './shape/processes.js'
import { summarizeProfiles } from './shape/profile-summary.js'

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    levels: { type: 'string', default: '2,8,64' },
    targets: { type: 'string', default: 'shape-1,shape-2,embedded' },
    profile: { type: 'string' },
  },
})
const seconds = Number(values.seconds)
const levels = values.levels.split(',').map(Number)

/** Issue 28 part 2.3's goals, for the production shape. */
function goals(runs: LevelFigures[]) {
  const at = (n: number) => runs.find((r) => r.inFlight === n)
  const top = at(Math.max(...levels))
  const low = at(Math.min(...levels))
  /** The shape's own statements (its MariaDB users': selects and writes) and explicit COMMITs. */
  const own = (r: LevelFigures | undefined) =>
    (r?.dbUserPerCycle as { total?: Record<string, number | null> } | null)?.total
  const statements = (r: LevelFigures | undefined) => {
    const t = own(r)
    return t ? (t.selects ?? 0) + (t.writes ?? 0) : null
  }
  const commits = top?.dbPerCycle?.Com_commit ?? null
  const check = (value: number | null | undefined, ok: (v: number) => boolean) => ({
    value: value ?? null,
    met: value === null || value === undefined ? null : ok(value),
  })
  return {
    cyclesPerSecondAtTop: check(top?.cyclesPerSecond, (v) => v >= 300),
    serverCpuMsPerCycleAtTop: check(top?.cpuMsPerCycle.cyborgTotal, (v) => v <= 6),
    statementsPerCycleAtTop: check(statements(top), (v) => v <= 15),
    /** Explicit COMMITs (write transactions), server-wide (`Com_commit`). */
    commitsPerCycleAtTop: check(commits, (v) => v < 0.5),
    /** InnoDB commits of the shape's own users, autocommitted reads included (not a goal). */
    innodbCommitsPerCycleAtTop: own(top)?.commits ?? null,
    cycleP50MsAtLowest: check(low?.cycleMs?.p50, (v) => v <= 12),
  }
}

async function startTarget(name: string, placementUrl: string) {
  const profileDir = values.profile ? path.resolve(values.profile, name) : undefined
  if (name === 'embedded') {
    const server = await startEmbeddedServer(placementUrl, 'auto', 0, 'nova')
    const target: Target = {
      ...server,
      pids: { embedded: server.pid },
      metrics: {},
      mariadb: false,
      placementUrl,
    }
    return { target, stop: () => server.stop(), profileDir: undefined }
  }
  const workers = Number(/^shape-(\d+)$/.exec(name)?.[1] ?? 1)
  const shape = await startShape({
    placementUrl,
    apiWorkers: workers,
    ...(profileDir ? { cpuProfileDir: profileDir } : {}),
  })
  const target: Target = { ...shape, mariadb: true, database: shape.database, placementUrl }
  return { target, stop: () => shape.stop(), profileDir }
}

const loadAtStart = loadavg()[0] ?? 0
const placement = await startPlacement()
const results: Record<string, unknown> = {}
try {
  for (const name of values.targets.split(',')) {
    const { target, stop, profileDir } = await startTarget(name, placement.url)
    const runs: LevelFigures[] = []
    let stats: unknown
    try {
      for (const level of levels) {
        runs.push(await measureLevel(target, level, seconds))
        process.stderr.write(
          `production-shape ${name} ${level} in flight: ${runs.at(-1)!.cyclesPerSecond} cycles/s, ` +
            `p50 ${runs.at(-1)!.cycleMs?.p50} ms, ${runs.at(-1)!.cpuMsPerCycle.cyborgTotal} CPU ` +
            `ms/cycle\n`,
        )
      }
    } finally {
      stats = await stop()
    }
    const profiles = profileDir
      ? Object.fromEntries(
          await Promise.all(
            ['api', 'conductor', 'agent'].map(
              async (p) =>
                [
                  p,
                  await summarizeProfiles(path.join(profileDir, p), {
                    windows: runs.map((r) => r.window),
                    cycles: runs.reduce((a, r) => a + r.cycles, 0),
                  }),
                ] as const,
            ),
          ),
        )
      : undefined
    results[name] = {
      goals: name === 'embedded' ? undefined : goals(runs),
      runs,
      ...(stats ? { embeddedStats: stats } : {}),
      ...(profiles ? { profiles } : {}),
    }
  }
} finally {
  await placement.stop()
}
process.stdout.write(
  `${JSON.stringify(
    {
      units: 16,
      seconds,
      machine: { ...machineFacts(loadAtStart), loadAverage1mAtEnd: loadavg()[0] },
      targets: results,
    },
    null,
    2,
  )}\n`,
)
