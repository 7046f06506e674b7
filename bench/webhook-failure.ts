/**
 * Dead webhook receivers under load (issue 27). For each shape (bench/events/webhook-failure-targets.ts:
 * `embedded` = `cyborg up`'s one process on SQLite; `multi` = api + conductor + agent over
 * RabbitMQ and MariaDB), two runs side by side: `none` (no webhook) and `dead` (`--receivers`
 * webhooks on `accelerator.*` whose loopback ports refuse connections). Each run:
 * 1. queues: `--events`/2 ARQs created and deleted (2 events each), so that every dead receiver
 *    has `--events` deliveries pending before the load starts;
 * 2. load, `--seconds`: bind cycles (profile, create, bind, resolved, delete, as Nova drives them)
 *    and GET-one reads (`GET /v2/device_profiles/{uuid}`), each `--inflight` at a time;
 * 3. idle, `--idle` seconds with no client: each process's CPU (in `dead`, the dispatcher facing
 *    dead receivers: the goal is under 5 % of a core);
 * 4. `dead` only: listeners start on those ports; every event must reach its receiver, none dead.
 * Event-loop lag p99 and max of every process come from its /metrics (prom-client's
 * nodejs_eventloop_lag_p99_seconds, reset by each scrape: one scrape before a phase, one after).
 * Goals: API and bind-cycle p99 within 1.5× of `none`, lag p99 < 50 ms everywhere, dispatcher CPU
 * < 5 %, every event delivered. Prints one JSON document.
 * `--rounds N` repeats both runs N times (every other round dead first) and summarises each
 * figure by its median over the rounds. `--quick`: 8 s of load, 5 s idle, one round.
 * Usage: npm run bench:webhook-failure [-- --quick] [--shapes embedded,multi] [--seconds 20]
 *   [--idle 10] [--receivers 10] [--events 300] [--inflight 2] [--rounds 3]
 */
import { createServer, type Server } from 'node:http'
import { cpus } from 'node:os'
import { parseArgs } from 'node:util'
import { freePort } from '../test/support/service.js'
import { STORM_PROFILE } from '../test/support/storm-inventory.js'
import { storm } from './storm/boot-storm-client.js'
import { percentiles, round2 } from './events/events-sinks.js'
import { call, cpuOf } from './events/events-targets.js'
import {
  startEmbeddedTarget,
  startMultiTarget,
  type FailureTarget,
  type Proc,
} from './events/webhook-failure-targets.js'

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    shapes: { type: 'string', default: 'embedded,multi' },
    seconds: { type: 'string' },
    idle: { type: 'string' },
    receivers: { type: 'string', default: '10' },
    events: { type: 'string', default: '300' },
    inflight: { type: 'string', default: '2' },
    rounds: { type: 'string' },
  },
})
const settings = {
  shapes: values.shapes.split(','),
  seconds: Number(values.seconds ?? (values.quick ? 8 : 20)),
  idle: Number(values.idle ?? (values.quick ? 5 : 10)),
  receivers: Number(values.receivers),
  events: Number(values.events),
  inflight: Number(values.inflight),
  rounds: Number(values.rounds ?? (values.quick ? 1 : 3)),
}
const START: Record<string, () => Promise<FailureTarget>> = {
  embedded: startEmbeddedTarget,
  multi: startMultiTarget,
}
for (const s of settings.shapes) if (!START[s]) throw new Error(`unknown shape ${s}`)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Each process's event-loop lag p99 and max (ms) since its last scrape. */
async function lagOf(procs: readonly Proc[]) {
  const out: Record<string, { p99Ms: number | null; maxMs: number | null }> = {}
  for (const p of procs) {
    const text = await (await fetch(p.metricsUrl)).text()
    const read = (name: string) => {
      const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)`, 'm').exec(text)
      return m ? round2(Number(m[1]) * 1000) : null
    }
    out[p.name] = {
      p99Ms: read('nodejs_eventloop_lag_p99_seconds'),
      maxMs: read('nodejs_eventloop_lag_max_seconds'),
    }
  }
  return out
}

/** CPU of each process over `fn`, in % of one core. */
async function cpuDuring<T>(procs: readonly Proc[], fn: () => Promise<T>) {
  const before = procs.map((p) => cpuOf([p.pid]))
  const t0 = performance.now()
  const value = await fn()
  const wall = (performance.now() - t0) / 1000
  const cpuPct: Record<string, number | null> = {}
  procs.forEach((p, i) => {
    const now = cpuOf([p.pid])
    cpuPct[p.name] =
      now === null || before[i] === null ? null : round2(((now - before[i]!) / wall) * 100)
  })
  return { value, cpuPct }
}

/** A receiver on `port` that answers 204 and counts each webhook-id. */
async function listen(port: number) {
  const ids = new Set<string>()
  let requests = 0
  const server: Server = createServer((req, res) => {
    requests++
    ids.add(String(req.headers['webhook-id']))
    req.resume()
    req.on('end', () => res.writeHead(204).end())
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  return {
    ids,
    requests: () => requests,
    close: () => new Promise<void>((r) => server.close(() => r())),
  }
}

async function deliveriesOf(api: string, uuid: string) {
  const got = await call('GET', `${api}/v2/webhooks/${uuid}`)
  return (got.data as { deliveries: { pending: number; delivered: number; dead: number } })
    .deliveries
}

/** GET-one reads, `inflight` at a time, for `seconds`: their latencies. */
async function readOne(api: string, seconds: number, inflight: number) {
  const dp = await call('GET', `${api}/v2/device_profiles?name=${STORM_PROFILE}`)
  const uuid = (dp.data as { device_profiles: { uuid: string }[] }).device_profiles[0]!.uuid
  const ms: number[] = []
  let errors = 0
  const until = performance.now() + seconds * 1000
  const worker = async () => {
    while (performance.now() < until) {
      const t = performance.now()
      const res = await fetch(`${api}/v2/device_profiles/${uuid}`)
      await res.arrayBuffer()
      if (res.status === 200) ms.push(performance.now() - t)
      else errors++
    }
  }
  await Promise.all(Array.from({ length: inflight }, worker))
  return { reads: ms.length, errors, ms: percentiles(ms) }
}

async function runOnce(target: FailureTarget, dead: boolean) {
  const api = target.url
  const ports = await Promise.all(Array.from({ length: settings.receivers }, () => freePort()))
  const hooks: string[] = []
  if (dead)
    for (const [i, port] of ports.entries()) {
      const body = { url: `http://127.0.0.1:${port}/hook-${i}`, event_types: ['accelerator.*'] }
      const res = await call('POST', `${api}/v2/webhooks`, body)
      if (res.status !== 201) throw new Error(`POST /v2/webhooks: ${res.status}`)
      hooks.push((res.data as { uuid: string }).uuid)
    }
  // 1. The backlog: two events (created, deleted) per ARQ.
  for (let i = 0; i < settings.events / 2; i++) {
    const created = await call('POST', `${api}/v2/accelerator_requests`, {
      device_profile_name: STORM_PROFILE,
    })
    const arq = (created.data as { arqs: { uuid: string }[] }).arqs[0]!.uuid
    await call('DELETE', `${api}/v2/accelerator_requests?arqs=${arq}`)
  }
  const deadline = Date.now() + 30_000
  const queued = async () =>
    Promise.all(hooks.map(async (h) => (await deliveriesOf(api, h)).pending))
  while (dead && (await queued()).some((n) => n < settings.events) && Date.now() < deadline)
    await sleep(200)
  const queuedBefore = dead ? await queued() : []
  // 2. Load.
  await lagOf(target.procs)
  const load = await cpuDuring(target.procs, () =>
    Promise.all([
      storm(api, settings.inflight, target.rps, settings.seconds),
      readOne(api, settings.seconds, settings.inflight),
    ]),
  )
  const loadLag = await lagOf(target.procs)
  // 3. Idle, receivers still dead.
  const idle = await cpuDuring(target.procs, () => sleep(settings.idle * 1000))
  const idleLag = await lagOf(target.procs)
  const [cycles, reads] = load.value
  const figures = {
    queuedPerReceiverBeforeLoad: queuedBefore,
    load: {
      getOne: reads,
      bindCycles: {
        cycles: cycles.cycles,
        cyclesPerSecond: cycles.cyclesPerSecond,
        ms: cycles.ms.cycle,
      },
      errors: cycles.errors,
      doubleAllocations: cycles.doubleAllocations,
      cpuPct: load.cpuPct,
      eventLoopLag: loadLag,
    },
    idle: { seconds: settings.idle, cpuPct: idle.cpuPct, eventLoopLag: idleLag },
  }
  if (!dead) return figures
  // 4. The receivers come back.
  const back = await Promise.all(ports.map((p) => listen(p)))
  const t0 = performance.now()
  let states = await Promise.all(hooks.map((h) => deliveriesOf(api, h)))
  while (states.some((s) => s.pending > 0) && performance.now() - t0 < 180_000) {
    await sleep(250)
    states = await Promise.all(hooks.map((h) => deliveriesOf(api, h)))
  }
  const drainedS = round2((performance.now() - t0) / 1000)
  await Promise.all(back.map((b) => b.close()))
  const everyEventDelivered = states.every(
    (s, i) => s.pending === 0 && s.dead === 0 && s.delivered === back[i]!.ids.size,
  )
  return {
    ...figures,
    recovery: {
      drainedSeconds: drainedS,
      delivered: states.map((s) => s.delivered),
      pending: states.map((s) => s.pending),
      dead: states.map((s) => s.dead),
      uniqueIdsReceived: back.map((b) => b.ids.size),
      requestsReceived: back.map((b) => b.requests()),
      everyEventDelivered,
    },
  }
}

type Figures = Awaited<ReturnType<typeof runOnce>>
const ratio = (a: number | null, b: number | null) => (a && b ? round2(a / b) : null)
function verdict(none: Figures, dead: Figures) {
  const apiP99 = ratio(dead.load.getOne.ms.p99, none.load.getOne.ms.p99)
  const cycleP99 = ratio(dead.load.bindCycles.ms?.p99 ?? null, none.load.bindCycles.ms?.p99 ?? null)
  const lags = Object.values(dead.load.eventLoopLag).map((l) => l.p99Ms ?? Infinity)
  // The dispatcher runs in the conductor (or the one embedded process): its CPU while idle.
  const dispatcherOf = (pct: Record<string, number | null>) =>
    pct.conductor ?? pct.embedded ?? Infinity
  const recovered = 'recovery' in dead && dead.recovery.everyEventDelivered
  return {
    apiP99Ratio: { value: apiP99, goal: 1.5, met: apiP99 !== null && apiP99 <= 1.5 },
    bindCycleP99Ratio: { value: cycleP99, goal: 1.5, met: cycleP99 !== null && cycleP99 <= 1.5 },
    eventLoopLagP99MaxMs: { value: Math.max(...lags), goal: 50, met: Math.max(...lags) < 50 },
    dispatcherCpuPct: {
      value: dispatcherOf(dead.idle.cpuPct),
      sameProcessWithoutWebhooks: dispatcherOf(none.idle.cpuPct),
      goal: 5,
      met: dispatcherOf(dead.idle.cpuPct) < 5,
    },
    everyEventDelivered: recovered,
  }
}

/** The rounds' goals in one: each figure per round, its median, and whether that meets the goal. */
function summary(goals: readonly ReturnType<typeof verdict>[]) {
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!
  const of = (
    pick: (g: ReturnType<typeof verdict>) => number | null,
    goal: number,
    below = false,
  ) => {
    const perRound = goals.map(pick)
    const m = median(perRound.map((x) => x ?? Infinity))
    return { perRound, median: m, goal, met: below ? m < goal : m <= goal }
  }
  return {
    apiP99Ratio: of((g) => g.apiP99Ratio.value, 1.5),
    bindCycleP99Ratio: of((g) => g.bindCycleP99Ratio.value, 1.5),
    eventLoopLagP99MaxMs: of((g) => g.eventLoopLagP99MaxMs.value, 50, true),
    dispatcherCpuPct: of((g) => g.dispatcherCpuPct.value, 5, true),
    everyEventDelivered: goals.every((g) => g.everyEventDelivered),
  }
}

const results: Record<string, unknown> = {}
for (const shape of settings.shapes) {
  const rounds: { none: Figures; dead: Figures; goals: ReturnType<typeof verdict> }[] = []
  for (let round = 0; round < settings.rounds; round++) {
    const runs: Partial<Record<'none' | 'dead', Figures>> = {}
    // Every other round the other order: a small, shared machine drifts.
    for (const dead of round % 2 ? [true, false] : [false, true]) {
      const target = await START[shape]!()
      try {
        runs[dead ? 'dead' : 'none'] = await runOnce(target, dead)
      } finally {
        await target.stop()
      }
    }
    rounds.push({ none: runs.none!, dead: runs.dead!, goals: verdict(runs.none!, runs.dead!) })
  }
  results[shape] = { summary: summary(rounds.map((r) => r.goals)), rounds }
}
const machine = { cpus: cpus().length, node: process.version }
const doc = {
  benchmark: 'webhook-failure',
  date: new Date().toISOString(),
  machine,
  settings,
  results,
}
process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`)
