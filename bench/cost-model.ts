/**
 * A cost model for many machines (issue 30 part 4): what one bind cycle and one agent report cost
 * in the production shape (bench/shape/processes.ts: `cyborg api`, `cyborg conductor` and
 * `cyborg agent` over RabbitMQ and MariaDB, real Placement behind a counting proxy, a Nova
 * stand-in), with 1 and then 2 conductors on the same database and broker. Per unit
 * (bench/shape/around.ts): CPU ms of each process and of MariaDB, RabbitMQ and Placement (/proc),
 * MariaDB statements and commits (`SHOW GLOBAL STATUS` deltas server-wide, and the shape's own users'),
 * broker messages (`cyborg_bus_messages_total` of each process and of the simulated agents' bus),
 * Placement calls. The units: bind cycles (create ARQ, bind, poll resolved, delete) at `--in-flight`;
 * then `--hosts` simulated agents (bench/shape/agent-reports.ts) seeded once, then measured: each
 * host's unchanged period report, `--changed` changed reports, `--beats` lease heartbeats and one
 * telemetry message per host. Then the model (bench/shape/sizing.ts): the 2-conductor figures
 * predicted from the 1-conductor ones against those measured, and the sizing of a fleet
 * (docs/scaling.md). Prints one JSON document with the load average at start and end.
 * Usage: npm run bench:cost-model [-- --seconds 4 --in-flight 8 --conductors 1,2 --hosts 150
 *   --devices 4 --changed 50 --beats 1500]
 */
import { loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import { startPlacement } from '../test/support/peers/placement.js'
import { machineFacts } from './support/load.js'
import { storm } from './storm/boot-storm-client.js'
import { startShape } from './shape/processes.js'
import { around, idleCpuMsPerSecond, type Figures } from './shape/around.js'
import { startAgents } from './shape/agent-reports.js'
import { conductorMs, dbPerUnit, size, type Units } from './shape/sizing.js'

const opt = (d: string) => ({ type: 'string' as const, default: d })
const { values } = parseArgs({
  options: {
    seconds: opt('4'),
    'in-flight': opt('8'),
    conductors: opt('1,2'),
    hosts: opt('150'),
    devices: opt('4'),
    changed: opt('50'),
    beats: opt('1500'),
  },
})
const seconds = Number(values.seconds)
const inFlight = Number(values['in-flight'])
const hosts = Number(values.hosts)
const log = (line: string) => process.stderr.write(`cost-model ${line}\n`)
const round = (x: number, d = 3) => Math.round(x * 10 ** d) / 10 ** d

async function measure(conductors: number, placementUrl: string) {
  const shape = await startShape({ placementUrl, conductors })
  const target = { ...shape, mariadb: true, placementUrl }
  try {
    await storm(shape.url, inFlight, shape.rps, Math.min(2, seconds)) // warm-up, not measured
    const idle = await idleCpuMsPerSecond(target)
    const bind = await around(target, async () => {
      const r = await storm(shape.url, inFlight, shape.rps, seconds)
      return {
        units: r.cycles,
        cyclesPerSecond: r.cyclesPerSecond,
        cycleMs: r.ms.cycle,
        errors: r.errors,
      }
    })
    log(`${conductors} conductor(s): ${bind.units} cycles, ${bind.cpuMs.cyborgTotal} CPU ms/cycle`)
    const agents = await startAgents(shape.transportUrl, { hosts, devices: Number(values.devices) })
    try {
      const seed = await agents.seed()
      log(`${conductors} conductor(s): seeded ${seed.reports} hosts in ${seed.seconds} s`)
      const unchanged = await around(target, () => agents.unchanged(seconds))
      const changed = await around(target, () => agents.changed(Number(values.changed), seconds))
      const heartbeat = await around(target, () => agents.heartbeats(Number(values.beats), seconds))
      const telemetry = await around(target, () => agents.telemetry(hosts, seconds))
      const units: Units = { bind, unchanged, changed, heartbeat, telemetry }
      for (const [k, f] of Object.entries(units))
        log(`${conductors} conductor(s) ${k}: ${f.perSecond}/s, ${f.cpuMs.cyborgTotal} CPU ms each`)
      return { idleCpuMsPerSecond: idle, seed, units }
    } finally {
      await agents.close()
    }
  } finally {
    await shape.stop()
  }
}

/** What the model says a unit costs with `n` conductors, from the 1-conductor figures. */
function predict(one: Figures, kind: keyof Units, n: number) {
  const fanout = kind === 'telemetry' // every conductor takes every message
  return {
    conductorsCpuMs: round(conductorMs(one) * (fanout ? n : 1)),
    ...dbPerUnit(one),
    busPublished: one.bus.published,
    busDelivered: round(one.bus.delivered + (fanout ? n - 1 : 0)),
  }
}

function observed(f: Figures) {
  return {
    conductorsCpuMs: round(conductorMs(f)),
    ...dbPerUnit(f),
    busPublished: f.bus.published,
    busDelivered: f.bus.delivered,
  }
}

const loadAtStart = loadavg()[0] ?? 0
const placement = await startPlacement()
const runs: Record<string, Awaited<ReturnType<typeof measure>>> = {}
try {
  for (const n of values.conductors.split(',').map(Number))
    runs[`conductors-${n}`] = await measure(n, placement.url)
} finally {
  await placement.stop()
}
const one = runs['conductors-1']
const model = one
  ? Object.fromEntries(
      Object.entries(runs)
        .filter(([k]) => k !== 'conductors-1')
        .map(([k, run]) => {
          const n = Number(k.split('-')[1])
          const kinds = Object.keys(run.units) as (keyof Units)[]
          return [
            k,
            Object.fromEntries(
              kinds.map((kind) => [
                kind,
                {
                  predicted: predict(one.units[kind], kind, n),
                  measured: observed(run.units[kind]),
                },
              ]),
            ),
          ]
        }),
    )
  : null
process.stdout.write(
  `${JSON.stringify(
    {
      benchmark: 'cost-model',
      date: new Date().toISOString(),
      settings: {
        seconds,
        inFlight,
        hosts,
        devices: Number(values.devices),
        changed: Number(values.changed),
        beats: Number(values.beats),
      },
      machine: { ...machineFacts(loadAtStart), loadAverage1mAtEnd: round(loadavg()[0] ?? 0, 2) },
      runs,
      model,
      sizing: one ? size(one.units) : null,
    },
    null,
    2,
  )}\n`,
)
