/**
 * The cost of quota checking on standalone binds (issue 17), both sides in one run:
 * - `noop`: a conductor without quota (`[quota] driver = noop`, the default);
 * - `unified_limits`: a conductor holding standalone binds to Keystone unified limits
 *   (docs/quota.md), `cache_seconds = 60` (the default), against a real Keystone
 *   (scripts/keystone.sh) whose registered `class:FPGA` limit is too high to refuse anything.
 * Each side has its own fresh database (SQLite in memory, and PostgreSQL with
 * `--dialects sqlite,postgres`) and its own conductor in this process; `concurrency` workers each
 * loop createArqs → bindArqs standalone (the conductor chooses a TEST_PCI handle, Bound in the
 * transaction: no agent) → deleteArqs by instance, all in one Keystone project. So the quota side
 * adds, per bind, the cached limits lookup, the project's quota lock (an upsert) and the usage
 * count in the claim's transaction. After a warm-up of each side, rounds alternate which side goes
 * first. Reported per round and as means: binds/s, p50/p99 bind latency, this process's CPU per
 * bind, and the ratio unified_limits / noop. Goal: ratio ≥ 0.9. Prints one JSON document.
 * Usage: npm run bench:quota [-- --seconds 5 --rounds 3 --concurrency 32 --warmup 2
 *        --dialects sqlite,postgres]
 */
import { loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import { testDialects } from '../test/support/db.js'
import { round2 } from './events/events-sinks.js'
import { eventLoopLag, machineFacts } from './support/load.js'
import {
  createSide,
  startQuotaKeystone,
  workload,
  type QuotaKeystone,
  type RoundFigures,
  type Side,
  type SideName,
} from './support/quota-sides.js'

interface Settings {
  seconds: number
  rounds: number
  concurrency: number
  warmup: number
  dialects: string[]
  cacheSeconds: number
  registeredLimit: number
}

const mean = (xs: readonly number[]) => round2(xs.reduce((s, x) => s + x, 0) / xs.length)
const meanOrNull = (xs: readonly (number | null)[]) =>
  xs.some((x) => x === null) ? null : mean(xs as number[])

/** The means of one side's rounds. */
function sideMeans(rs: readonly RoundFigures[]) {
  return {
    bindsPerSecond: mean(rs.map((r) => r.bindsPerSecond)),
    bindLatencyP50Ms: meanOrNull(rs.map((r) => r.bindLatencyMs.p50)),
    bindLatencyP99Ms: meanOrNull(rs.map((r) => r.bindLatencyMs.p99)),
    processCpuUsPerBind: meanOrNull(rs.map((r) => r.processCpuUsPerBind)),
    binds: rs.reduce((s, r) => s + r.binds, 0),
    bindFailed: rs.reduce((s, r) => s + r.bindFailed, 0),
    errors: rs.reduce((s, r) => s + Object.values(r.errors).reduce((a, b) => a + b, 0), 0),
  }
}

async function runDialect(dialectName: string, keystone: QuotaKeystone, settings: Settings) {
  const dialect = (await testDialects()).find((d) => d.name === dialectName)
  if (!dialect) return { skipped: `unknown dialect ${dialectName}` }
  if (dialect.skip) return { skipped: dialect.skip }
  const handles = settings.concurrency * 2
  const sides: Partial<Record<SideName, Side>> = {}
  try {
    sides.noop = await createSide('noop', dialect, handles, undefined)
    sides.unified_limits = await createSide(
      'unified_limits',
      dialect,
      handles,
      keystone.limits(settings.cacheSeconds * 1000),
    )
    const run = (name: SideName, seconds: number) =>
      workload(sides[name]!, keystone.projectId, settings.concurrency, seconds)
    const warmup =
      settings.warmup > 0
        ? {
            noop: await run('noop', settings.warmup),
            unified_limits: await run('unified_limits', settings.warmup),
          }
        : undefined
    const rounds = []
    const got: Record<SideName, RoundFigures[]> = { noop: [], unified_limits: [] }
    for (let r = 0; r < settings.rounds; r++) {
      const order: SideName[] =
        r % 2 === 0 ? ['noop', 'unified_limits'] : ['unified_limits', 'noop']
      const round: Partial<Record<SideName, RoundFigures>> = {}
      for (const name of order) round[name] = await run(name, settings.seconds)
      got.noop.push(round.noop!)
      got.unified_limits.push(round.unified_limits!)
      rounds.push({
        round: r + 1,
        order,
        noop: round.noop!,
        unified_limits: round.unified_limits!,
        ratio: round.noop!.bindsPerSecond
          ? round2(round.unified_limits!.bindsPerSecond / round.noop!.bindsPerSecond)
          : null,
      })
    }
    const means = { noop: sideMeans(got.noop), unified_limits: sideMeans(got.unified_limits) }
    const ratio = means.noop.bindsPerSecond
      ? Math.round((means.unified_limits.bindsPerSecond / means.noop.bindsPerSecond) * 1000) / 1000
      : null
    const cpu =
      means.noop.processCpuUsPerBind === null || means.unified_limits.processCpuUsPerBind === null
        ? null
        : round2(means.unified_limits.processCpuUsPerBind - means.noop.processCpuUsPerBind)
    const quotaRows = await sides.unified_limits.db.db
      .selectFrom('quota_projects')
      .select('project_id')
      .execute()
    return {
      rounds,
      warmup,
      means,
      ratio,
      roundRatios: rounds.map((r) => r.ratio),
      extraProcessCpuUsPerBind: cpu,
      limitLookups: sides.unified_limits.lookups,
      quotaLockRows: quotaRows.length,
      goal: { throughputAtLeast90Percent: { ratio, met: ratio !== null && ratio >= 0.9 } },
    }
  } finally {
    for (const s of [sides.unified_limits, sides.noop]) await s?.close().catch(() => {})
  }
}

async function main() {
  const { values } = parseArgs({
    options: {
      seconds: { type: 'string', default: '5' },
      rounds: { type: 'string', default: '3' },
      concurrency: { type: 'string', default: '32' },
      warmup: { type: 'string', default: '2' },
      dialects: { type: 'string', default: 'sqlite' },
      'cache-seconds': { type: 'string', default: '60' },
    },
  })
  const loadAtStart = loadavg()[0]!
  const settings: Settings = {
    seconds: Number(values.seconds),
    rounds: Number(values.rounds),
    concurrency: Number(values.concurrency),
    warmup: Number(values.warmup),
    dialects: values.dialects.split(',').filter(Boolean),
    cacheSeconds: Number(values['cache-seconds']),
    registeredLimit: 1_000_000,
  }
  const t0 = Date.now()
  const keystone = await startQuotaKeystone(settings.registeredLimit)
  const keystoneStartSeconds = round2((Date.now() - t0) / 1000)
  const results: Record<string, unknown> = {}
  const lag = eventLoopLag()
  try {
    for (const d of settings.dialects) results[d] = await runDialect(d, keystone, settings)
  } finally {
    await keystone.ks.stop()
  }
  const goals = Object.fromEntries(
    Object.entries(results).map(([d, r]) => {
      const g = (r as { goal?: { throughputAtLeast90Percent: { met: boolean } } }).goal
      return [d, g ? g.throughputAtLeast90Percent.met : null]
    }),
  )
  const measured = Object.values(goals).filter((g) => g !== null)
  process.stdout.write(
    `${JSON.stringify(
      {
        benchmark: 'quota',
        date: new Date().toISOString(),
        machine: { ...machineFacts(loadAtStart), loadAverage1mAtEnd: round2(loadavg()[0]!) },
        settings: { ...settings, keystoneStartSeconds },
        eventLoopLag: { benchmarkProcess: lag(), services: 'embedded: the benchmark process' },
        results,
        goal: {
          statement: 'unified_limits binds/s ≥ 0.9 × noop binds/s, on every dialect measured',
          byDialect: goals,
          met: measured.length > 0 && measured.every(Boolean),
        },
      },
      null,
      2,
    )}\n`,
  )
}

await main()
