/**
 * Memory under a steady load (issue 28 part 2.4): the production shape (bench/shape/processes.ts:
 * `cyborg api`, `conductor`, `agent` over RabbitMQ and MariaDB, real Placement, a Nova stand-in;
 * cleaning on as shipped) loaded with Nova-style bind cycles started at a steady rate (default 100
 * a second, at most `--max-in-flight` at once) for `--minutes` (default 10). Each process's RSS
 * (an API's cluster workers each apart) is sampled every 10 s; the JSON compares the end with the
 * sample at `--reference-minute` (default 2; half the run when the run is shorter than twice that).
 * Goals: every process's RSS at the end within 15 % of the reference, the conductor under 150 MB,
 * each API worker under 100 MB.
 * Usage: npm run bench:soak [-- --minutes 10 --rate 100 --max-in-flight 16 --api-workers 1]
 */
import { loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import { startPlacement } from '../test/support/peers/placement.js'
import { machineFacts } from './support/load.js'
import { pacedCycles } from './shape/paced.js'
import { sampleProcess } from './shape/measure.js'
import { startShape } from './shape/processes.js'
import { heapMb, memoryMb } from './footprint/process.js'

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    rate: { type: 'string', default: '100' },
    'max-in-flight': { type: 'string', default: '16' },
    'api-workers': { type: 'string', default: '1' },
    'reference-minute': { type: 'string', default: '2' },
    'node-options': { type: 'string', default: '' },
  },
})
const durationMs = Number(values.minutes) * 60_000
const referenceMs = Math.min(Number(values['reference-minute']) * 60_000, durationMs / 2)
const loadAtStart = loadavg()[0] ?? 0
const placement = await startPlacement()
const shape = await startShape({
  placementUrl: placement.url,
  apiWorkers: Number(values['api-workers']),
  ...(values['node-options'] ? { nodeOptions: values['node-options'] } : {}),
})
type Rss = Record<string, number[]>
const rss = (): Rss =>
  Object.fromEntries(Object.entries(shape.pids).map(([k, pid]) => [k, sampleProcess(pid).rssMb]))
const cpuMs = (): Record<string, number> =>
  Object.fromEntries(Object.entries(shape.pids).map(([k, pid]) => [k, sampleProcess(pid).cpuMs]))
const cpuAtStart = cpuMs()
const series: { atS: number; rssMb: Rss }[] = []
let reference: Rss | undefined
const started = Date.now()
const sampler = setInterval(() => {
  const now = rss()
  series.push({ atS: Math.round((Date.now() - started) / 1000), rssMb: now })
  if (!reference && Date.now() - started >= referenceMs) reference = now
}, 10_000)
let result: Awaited<ReturnType<typeof pacedCycles>>
try {
  result = await pacedCycles(shape.url, shape.rps, {
    rate: Number(values.rate),
    maxInFlight: Number(values['max-in-flight']),
    durationMs,
  })
} finally {
  clearInterval(sampler)
}
const end = rss()
const cpuAtEnd = cpuMs()
// Where each process's memory is at the end (the node executable's pages, private memory) and its
// V8 heap as its /metrics reports it: what holds the RSS (docs/performance.md, issue 28).
const heldAtEnd = Object.fromEntries(
  await Promise.all(
    Object.entries(shape.pids).map(async ([k, pid]) => {
      const url = shape.metrics[k as keyof typeof shape.metrics]
      return [k, { memoryMb: memoryMb(pid), heapMb: url ? await heapMb(url) : null }] as const
    }),
  ),
)
// CPU per bind cycle, each process (what a smaller young generation costs in scavenges).
const cpuMsPerCycle = Object.fromEntries(
  Object.keys(cpuAtEnd).map((k) => [
    k,
    Math.round(((cpuAtEnd[k]! - cpuAtStart[k]!) / Math.max(1, result.cycles)) * 100) / 100,
  ]),
)
await shape.stop()
await placement.stop()
const ref: Rss = reference ?? series[0]?.rssMb ?? end
const growth = Object.fromEntries(
  Object.keys(end).map((k) => [
    k,
    end[k]!.map((mb, i) => {
      const was = ref[k]?.[i]
      return was ? Math.round(((mb - was) / was) * 1000) / 10 : null
    }),
  ]),
)
// The API's first RSS is its primary (or its only process); cluster workers follow.
const apiWorkers = end.api!.length > 1 ? end.api!.slice(1) : end.api!
process.stdout.write(
  `${JSON.stringify(
    {
      machine: { ...machineFacts(loadAtStart), loadAverage1mAtEnd: loadavg()[0] },
      minutes: Number(values.minutes),
      referenceAtS: referenceMs / 1000,
      load: result,
      cpuMsPerCycle,
      rssMbAtReference: ref,
      rssMbAtEnd: end,
      heldAtEnd,
      growthPercent: growth,
      goals: {
        within15PercentOfReference: Object.values(growth)
          .flat()
          .every((g) => g === null || Math.abs(g) <= 15),
        conductorUnder150Mb: Math.max(...end.conductor!) < 150,
        eachApiWorkerUnder100Mb: apiWorkers.every((mb) => mb < 100),
      },
      series,
    },
    null,
    2,
  )}\n`,
)
