/**
 * Capacity and explain at fleet scale (issue 17): a fresh PostgreSQL database filled with
 * `--hosts` × `--per-host` deployables through the conductor's ingestion (bench/support/explain-fleet.ts:
 * PGPUs and FPGAs, traits, and some hosts inactive, maintaining, failed, past their lease or in
 * use, so that every rule has work), and the API alone in a child process over it (noauth, the
 * default policy, a real listener on 127.0.0.1). Each request is sent `--warmup` times, then
 * `--requests` times one after the other (latency = until the whole body is read), with the API
 * process's CPU time per request from /proc. With `--load-s` > 0, each is also loaded with
 * autocannon at `--connections` for that long. Goals: `GET /v2/capacity` p50 < 20 ms; explain
 * of a 2-group profile across the fleet p50 < 50 ms. Sections (`--sections`) are independent:
 * another (e.g. quota cost) is one more entry of SECTIONS. Prints one JSON document.
 * Usage: npm run bench:explain [-- --hosts 1000 --per-host 8 --requests 50 --warmup 5
 *   --load-s 0 --connections 2 --sections capacity,explain --fleet-cache-ms 0]
 */
import { loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { cpuSeconds, eventLoopLag, machineFacts, scrapeEventLoopLag } from './support/load.js'
import {
  hostName,
  seedFleet,
  serveApi,
  startApi,
  type ApiProcess,
} from './support/explain-fleet.js'
import { testDialects } from '../test/support/db.js'

const opt = (d: string) => ({ type: 'string' as const, default: d })
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    hosts: opt('1000'),
    'per-host': opt('8'),
    requests: opt('50'),
    warmup: opt('5'),
    'load-s': opt('0'),
    connections: opt('2'),
    sections: opt('capacity,explain'),
    /** `[api] fleet_cache_ms` of the API process (0, the default: reads kept only while nothing was committed). */
    'fleet-cache-ms': opt('0'),
    /** Internal: run the API process (`--serve <database url> <port>`). */
    serve: { type: 'string' },
  },
})

const VERSION = { 'openstack-api-version': 'accelerator 2.6' }
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d

/** One request of a benchmark: sent as is, every time. */
interface Probe {
  name: string
  method: 'GET' | 'POST'
  path: string
  body?: unknown
  /** The goal on the p50 in ms, when this request has one. */
  goalP50Ms?: number
  /** A sanity figure from one answer (e.g. rows, candidates that fit), to show what was measured. */
  summarize(body: unknown): unknown
}

interface Context {
  api: ApiProcess
  requests: number
  warmup: number
  loadSeconds: number
  connections: number
  profileName: string
  oneHost: string
}

const percentile = (sorted: readonly number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!

async function send(ctx: Context, p: Probe): Promise<{ status: number; body: ArrayBuffer }> {
  const res = await fetch(`${ctx.api.url}${p.path}`, {
    method: p.method,
    headers: {
      ...VERSION,
      ...(p.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(p.body === undefined ? {} : { body: JSON.stringify(p.body) }),
  })
  return { status: res.status, body: await res.arrayBuffer() }
}

/** Sequential requests: warm-up, then `requests` timed one after the other. */
async function sequential(ctx: Context, p: Probe) {
  // The first warm-up answer (sent even with --warmup 0) is checked and summarized.
  const first = await send(ctx, p)
  for (let i = 1; i < ctx.warmup; i++) await send(ctx, p)
  if (first.status !== 200)
    throw new Error(`${p.name}: ${first.status} ${new TextDecoder().decode(first.body)}`)
  const times: number[] = []
  let non200 = 0
  const cpuBefore = cpuSeconds(ctx.api.pid)
  for (let i = 0; i < ctx.requests; i++) {
    const start = performance.now()
    const { status } = await send(ctx, p)
    times.push(performance.now() - start)
    if (status !== 200) non200++
  }
  const cpuAfter = cpuSeconds(ctx.api.pid)
  const sorted = [...times].sort((a, b) => a - b)
  const p50 = percentile(sorted, 0.5)
  return {
    request: `${p.method} ${p.path}${p.body === undefined ? '' : ` ${JSON.stringify(p.body)}`}`,
    answer: p.summarize(JSON.parse(new TextDecoder().decode(first.body)) as unknown),
    responseBytes: first.body.byteLength,
    samples: times.length,
    latencyMs: {
      min: round(sorted[0]!),
      p50: round(p50),
      p90: round(percentile(sorted, 0.9)),
      p99: round(percentile(sorted, 0.99)),
      max: round(sorted.at(-1)!),
      mean: round(times.reduce((s, x) => s + x, 0) / times.length),
    },
    apiCpuMsPerRequest:
      cpuBefore === null || cpuAfter === null
        ? null
        : round(((cpuAfter - cpuBefore) * 1000) / ctx.requests),
    non200,
    ...(p.goalP50Ms === undefined
      ? {}
      : { goal: { p50BelowMs: p.goalP50Ms, met: p50 < p.goalP50Ms } }),
  }
}

/** autocannon at `connections` for `loadSeconds` (after a 2 s warm-up), when asked for. */
async function loaded(ctx: Context, p: Probe) {
  if (ctx.loadSeconds <= 0) return undefined
  const options = {
    url: `${ctx.api.url}${p.path}`,
    method: p.method,
    headers: {
      ...VERSION,
      ...(p.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(p.body === undefined ? {} : { body: JSON.stringify(p.body) }),
    connections: ctx.connections,
  }
  await autocannon({ ...options, duration: 2 })
  const cpuBefore = cpuSeconds(ctx.api.pid)
  const r = await autocannon({ ...options, duration: ctx.loadSeconds })
  const cpuAfter = cpuSeconds(ctx.api.pid)
  return {
    connections: ctx.connections,
    durationSeconds: ctx.loadSeconds,
    requestsPerSec: round(r.requests.average),
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    apiCpuMsPerRequest:
      cpuBefore === null || cpuAfter === null || r.requests.total === 0
        ? null
        : round(((cpuAfter - cpuBefore) * 1000) / r.requests.total),
    non2xx: r.non2xx,
    errors: r.errors,
  }
}

async function measure(ctx: Context, probes: readonly Probe[]) {
  const out: Record<string, unknown> = {}
  for (const p of probes) {
    const figures = await sequential(ctx, p)
    const load = await loaded(ctx, p)
    out[p.name] = load === undefined ? figures : { ...figures, autocannon: load }
  }
  return out
}

type CapacityBody = { capacity: { total: number; free: number }[] }
const capacitySummary = (b: unknown) => {
  const rows = (b as CapacityBody).capacity
  return {
    rows: rows.length,
    total: rows.reduce((s, r) => s + r.total, 0),
    free: rows.reduce((s, r) => s + r.free, 0),
  }
}
type ExplainBody = {
  groups: { resource_class: string; fits: number; candidates: { rule: string }[] }[]
}
const explainSummary = (b: unknown) =>
  (b as ExplainBody).groups.map((g) => {
    const rules: Record<string, number> = {}
    for (const c of g.candidates) rules[c.rule] = (rules[c.rule] ?? 0) + 1
    return { resourceClass: g.resource_class, candidates: g.candidates.length, rules }
  })

/** Each section measures its own requests; add one here (e.g. quota cost) to extend the bench. */
const SECTIONS: Record<string, (ctx: Context) => Promise<Record<string, unknown>>> = {
  capacity: (ctx) =>
    measure(ctx, [
      {
        name: 'fleet',
        method: 'GET',
        path: '/v2/capacity',
        goalP50Ms: 20,
        summarize: capacitySummary,
      },
      {
        name: 'fleetGroupByHost',
        method: 'GET',
        path: '/v2/capacity?group_by=host',
        summarize: capacitySummary,
      },
      {
        name: 'oneHost',
        method: 'GET',
        path: `/v2/capacity?hostname=${ctx.oneHost}`,
        summarize: capacitySummary,
      },
    ]),
  explain: (ctx) =>
    measure(ctx, [
      {
        name: 'fleet2Groups',
        method: 'POST',
        path: `/v2/device_profiles/${ctx.profileName}/explain`,
        goalP50Ms: 50,
        summarize: explainSummary,
      },
      {
        name: 'oneHost2Groups',
        method: 'POST',
        path: `/v2/device_profiles/${ctx.profileName}/explain`,
        body: { hostname: ctx.oneHost },
        summarize: explainSummary,
      },
    ]),
}

/** Every goal of the results, flattened: where, the goal, the p50 measured, met or not. */
function goals(results: Record<string, Record<string, unknown>>) {
  return Object.entries(results).flatMap(([section, probes]) =>
    Object.entries(probes).flatMap(([name, r]) => {
      const f = r as { request: string; latencyMs: { p50: number }; goal?: { p50BelowMs: number } }
      if (f.goal === undefined) return []
      return [
        {
          what: `${section}.${name}: ${f.request}`,
          goal: `p50 < ${f.goal.p50BelowMs} ms`,
          p50Ms: f.latencyMs.p50,
          met: f.latencyMs.p50 < f.goal.p50BelowMs,
        },
      ]
    }),
  )
}

async function main() {
  const loadAtStart = loadavg()[0]!
  const sections = values.sections.split(',').filter((s) => s !== '')
  for (const s of sections) if (!(s in SECTIONS)) throw new Error(`unknown section ${s}`)
  const postgres = (await testDialects()).find((d) => d.name === 'postgres')!
  if (postgres.skip) throw new Error(`cannot run: ${postgres.skip}`)
  const database = await postgres.create()
  process.env.BENCH_FLEET_CACHE_MS = values['fleet-cache-ms']
  let api: ApiProcess | undefined
  try {
    const hosts = Number(values.hosts)
    const fleet = await seedFleet(database.db, { hosts, perHost: Number(values['per-host']) })
    api = await startApi(database.url)
    const ctx: Context = {
      api,
      requests: Number(values.requests),
      warmup: Number(values.warmup),
      loadSeconds: Number(values['load-s']),
      connections: Number(values.connections),
      profileName: fleet.profile.name,
      oneHost: hostName(Math.floor(hosts / 2)),
    }
    const results: Record<string, Record<string, unknown>> = {}
    await scrapeEventLoopLag(`${api.url}/metrics`) // starts the API's lag window
    const lag = eventLoopLag()
    for (const s of sections) results[s] = await SECTIONS[s]!(ctx)
    const lagFigures = {
      benchmarkProcess: lag(),
      api: await scrapeEventLoopLag(`${api.url}/metrics`),
    }
    const goalList = goals(results)
    process.stdout.write(
      `${JSON.stringify(
        {
          benchmark: 'explain',
          date: new Date().toISOString(),
          machine: {
            ...machineFacts(loadAtStart),
            note: 'PostgreSQL, the API process and the client share the machine',
          },
          settings: {
            hosts,
            perHost: fleet.perHost,
            requests: ctx.requests,
            warmup: ctx.warmup,
            loadSeconds: ctx.loadSeconds,
            connections: ctx.connections,
            sections,
            fleetCacheMs: Number(values['fleet-cache-ms']),
            database: 'postgres (fresh database, ANALYZEd after the fill)',
            api: 'startHttpApi in a child process, noauth, microversion 2.6, 127.0.0.1',
            client: 'fetch, one request at a time, latency until the whole body is read',
            oneHost: ctx.oneHost,
          },
          fleet,
          results,
          goals: goalList,
          allGoalsMet: goalList.every((g) => g.met),
          eventLoopLag: lagFigures,
        },
        null,
        2,
      )}\n`,
    )
  } finally {
    await api?.stop()
    await database.close()
  }
}

if (values.serve !== undefined) await serveApi(values.serve, Number(positionals[0]))
else await main()
