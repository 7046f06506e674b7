/**
 * The compiled build's footprint (issue 28 part 2.1), as JSON:
 * - start-up: from the spawn to the first GET /v2/devices that lists the fake device, for `npm
 *   start` (compiled, through npm), `bin/cyborg up` (compiled) and the sources under tsx, interleaved;
 * - `cyborg up`'s RSS after 1,000 GETs, compiled and under tsx;
 * - the production shape (bench/footprint/production.ts): `cyborg agent`'s RSS while it discovers
 *   64 devices every second, and `cyborg api`'s after 1,000 GETs.
 * Goals: start < 0.5 s, up < 120 MB, agent < 60 MB, api < 80 MB. Builds dist/ first if it is stale.
 *
 *   npm run bench:footprint -- [--starts 5] [--agent-seconds 10] [--skip-starts] [--skip-up]
 *                              [--skip-production] [--runners npm,compiled,tsx]
 */
import { execFileSync } from 'node:child_process'
import { loadavg } from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { eventLoopLag, machineFacts } from './support/load.js'
import { ROOT } from '../test/support/service.js'
import { afterRequests, startOnce, type StartFigures } from './footprint/embedded.js'
import { productionShape } from './footprint/production.js'
import type { Runner } from './footprint/process.js'

const { values } = parseArgs({
  options: {
    starts: { type: 'string', default: '5' },
    'agent-seconds': { type: 'string', default: '10' },
    'skip-starts': { type: 'boolean', default: false },
    'skip-up': { type: 'boolean', default: false },
    'skip-production': { type: 'boolean', default: false },
    runners: { type: 'string', default: 'npm,compiled,tsx' },
  },
})
const loadAtStart = loadavg()[0]!
execFileSync(process.execPath, [path.join(ROOT, 'scripts/build.mjs'), '--if-stale'], {
  stdio: ['ignore', 'inherit', 'inherit'],
})

/** Median and range of each figure. */
function summary(runs: StartFigures[]) {
  const of = (key: keyof StartFigures) => {
    const xs = runs.map((r) => r[key]).sort((a, b) => a - b)
    return { median: xs[Math.floor(xs.length / 2)]!, min: xs[0]!, max: xs.at(-1)! }
  }
  return { visibleMs: of('visibleMs'), cpuMs: of('cpuMs'), runs }
}

const lag = eventLoopLag()
const runners = values.runners.split(',') as Runner[]
const starts = new Map<Runner, StartFigures[]>(runners.map((r) => [r, []]))
for (let i = 0; i < (values['skip-starts'] ? 0 : Number(values.starts)); i++)
  for (const r of runners) starts.get(r)!.push(await startOnce(r))
const upCompiled = values['skip-up'] ? null : await afterRequests('compiled')
const upTsx = values['skip-up'] ? null : await afterRequests('tsx')
const production = values['skip-production']
  ? { skipped: '--skip-production' }
  : await productionShape(Number(values['agent-seconds']))

const start = Object.fromEntries(runners.map((r) => [r, summary(starts.get(r)!)]))
const met = (ok: boolean) => (ok ? 'met' : 'not met')
const prod = 'skipped' in production ? undefined : production
console.log(
  JSON.stringify(
    {
      bench: 'footprint',
      machine: machineFacts(loadAtStart),
      loadAverage1mAtEnd: Math.round(loadavg()[0]! * 100) / 100,
      start: {
        npmStart: start.npm,
        binCyborgUp: start.compiled,
        tsx: start.tsx,
        what: 'spawn to the first GET /v2/devices listing the fake device; fresh SQLite each time',
      },
      upAfter1000Requests: { compiled: upCompiled, tsx: upTsx },
      production,
      goals: {
        npmStartUnder500Ms: start.npm?.runs.length
          ? met(start.npm.visibleMs.median < 500)
          : 'skipped',
        upUnder120MbAfter1000Requests: upCompiled
          ? met(upCompiled.rssAfterRequestsMb < 120)
          : 'skipped',
        agentUnder60MbDiscovering64: prod ? met(prod.agent.rssMb.maxMb < 60) : 'skipped',
        apiUnder80Mb: prod ? met(prod.api.rssAfterRequestsMb < 80) : 'skipped',
      },
      benchEventLoopLag: lag(),
    },
    null,
    2,
  ),
)
