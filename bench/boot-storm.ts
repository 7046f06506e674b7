/**
 * A VM boot storm, as Nova drives Cyborg per VM: GET the device profile, POST the ARQs, PATCH bind
 * (with the provider Placement would have picked), GET ?instance=&bind_state=resolved (polling 423),
 * DELETE ?instance=. Runs each concurrency level against (a) `bare`, the ceiling: a bare node:http
 * server with in-memory state (bench/storm/boot-storm-bare.ts: no framework, no database), (b) `embedded`,
 * the embedded server (bench/storm/boot-storm-embedded.ts: SQLite, in-process bus), its released units
 * cleaned before reuse by the storm host's stand-in agent (fake clean, 0 ms; issue 18), (c)
 * `embedded-noclean`, the same with the conductor's cleaning off (the baseline), and (d) `multi`:
 * `cyborg api` + 1 and 2 `cyborg conductor`s on RabbitMQ + PostgreSQL (cleaning on). With both
 * embedded targets, prints per level the ratio of their cycle throughput (cleaning / without; goal
 * ≥ 0.9). `--rounds N` runs the targets N times, in reverse order every other round (fairer on a
 * small machine). After each level, the units still used or cleaning are read from GET
 * /v2/capacity (`settled`, 0 and 0 when every clean was answered). Prints one JSON document, with
 * double allocations seen (must be 0).
 * Usage: npm run bench:boot-storm [-- --seconds 5 --levels 1,2,16,64 --rounds 1
 *   --targets bare,embedded,multi (or embedded-noclean)]
 */
import { cpus } from 'node:os'
import { parseArgs } from 'node:util'
import { listArq1000, settled, storm } from './storm/boot-storm-client.js'
import {
  eventLoopLag,
  LAG_NOT_SERVED,
  scrapeEventLoopLag,
  type LagFigures,
} from './support/load.js'
import {
  startBare,
  startEmbedded,
  startMulti,
  type StormTarget,
} from './storm/boot-storm-targets.js'

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    levels: { type: 'string', default: '1,2,16,64' },
    targets: { type: 'string', default: 'bare,embedded,multi' },
    rounds: { type: 'string', default: '1' },
  },
})
const seconds = Number(values.seconds)
const levels = values.levels.split(',').map(Number)
const rounds = Number(values.rounds)

type Row = Awaited<ReturnType<typeof storm>> & {
  settled: Awaited<ReturnType<typeof settled>>
  /** The benchmark (client) process's, and the API process's from its /metrics (bare and embedded serve none). */
  eventLoopLag: { benchmarkProcess: LagFigures; api: LagFigures | string }
}
interface Run {
  name: string
  start: () => Promise<StormTarget>
  /** Also lists 1,000 ARQs (first round only). */
  extra?: boolean
}
const RUNS: Record<string, Run[]> = {
  bare: [{ name: 'bare', start: startBare, extra: true }],
  embedded: [{ name: 'embedded', start: () => startEmbedded(true), extra: true }],
  'embedded-noclean': [{ name: 'embeddedNoClean', start: () => startEmbedded(false) }],
  multi: [
    { name: 'apiAnd1Conductor', start: () => startMulti(1) },
    { name: 'apiAnd2Conductors', start: () => startMulti(2) },
  ],
}
const targets = values.targets.split(',')
for (const t of targets) if (!RUNS[t]) throw new Error(`unknown target ${t}`)
const runs = targets.flatMap((t) => RUNS[t]!)

const rows: Record<string, Row[][]> = {}
const lists: Record<string, unknown> = {}
for (let round = 0; round < rounds; round++) {
  for (const { name, start, extra } of round % 2 ? [...runs].reverse() : runs) {
    const target = await start()
    try {
      const got: Row[] = []
      for (const level of levels) {
        await scrapeEventLoopLag(`${target.url}/metrics`) // starts the API's lag window
        const lag = eventLoopLag()
        const row = await storm(target.url, level, target.rps, seconds)
        const benchmarkProcess = lag()
        const api = (await scrapeEventLoopLag(`${target.url}/metrics`)) ?? LAG_NOT_SERVED
        got.push({
          ...row,
          eventLoopLag: { benchmarkProcess, api },
          settled: await settled(target.url),
        })
      }
      ;(rows[name] ??= []).push(got)
      if (extra && round === 0) lists[name] = await listArq1000(target.url)
    } finally {
      await target.stop()
    }
  }
}

const results: Record<string, unknown> = {}
for (const [name, perRound] of Object.entries(rows)) {
  results[name] = {
    ...(rounds === 1 ? { levels: perRound[0] } : { rounds: perRound }),
    ...(lists[name] ? { list1000: lists[name] } : {}),
  }
}

/** Cycle throughput with cleaning over without, per level: summed over the rounds, and per round. */
function cleaningRatio(on: Row[][], off: Row[][]) {
  const byLevel = levels.map((concurrency, i) => {
    const with_ = on.map((r) => r[i]!.cyclesPerSecond)
    const without = off.map((r) => r[i]!.cyclesPerSecond)
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0)
    const round2 = (x: number) => Math.round(x * 100) / 100
    return {
      concurrency,
      cyclesPerSecond: { cleaning: with_, noCleaning: without },
      ratio: round2(sum(with_) / sum(without)),
      ratioPerRound: with_.map((c, r) => round2(c / without[r]!)),
    }
  })
  return { goal: 0.9, met: byLevel.every((l) => l.ratio >= 0.9), byLevel }
}
const cleaning =
  rows.embedded && rows.embeddedNoClean
    ? cleaningRatio(rows.embedded, rows.embeddedNoClean)
    : undefined

process.stdout.write(
  JSON.stringify(
    {
      benchmark: 'boot-storm',
      date: new Date().toISOString(),
      machine: { cpus: cpus().length, node: process.version },
      settings: { seconds, levels, rounds, targets },
      results,
      ...(cleaning ? { cleaning } : {}),
    },
    null,
    2,
  ) + '\n',
)
