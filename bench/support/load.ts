/**
 * One autocannon load with a warm-up, and the server's CPU time per request from /proc, which
 * other load on a shared machine disturbs less than req/s. Shared by the HTTP benchmarks.
 */
import { readFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import autocannon from 'autocannon'

export interface LoadFigures {
  requestsPerSec: number
  /** The server process's CPU time (user + system) per request in the measured run; null off Linux. */
  serverCpuUsPerRequest: number | null
  p50Ms: number
  p99Ms: number
  non2xx: number
  errors: number
  /** This (the client) process's event-loop lag in the measured run. */
  clientEventLoopLag: LagFigures
  /** The server's, from its /metrics in the measured run; null when it serves none. */
  serverEventLoopLag: LagFigures | null
}

/**
 * CPU seconds (user + system) a process and its children (the workers of a `cyborg api` with
 * `[api] api_workers` > 1, issue 28) have used so far, from /proc; null where there is none.
 */
export function cpuSeconds(pid: number | undefined): number | null {
  const own = ownCpuSeconds(pid)
  if (own === null) return null
  let children: string[] = []
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/)
  } catch {
    // no children file: count the process alone
  }
  return children.reduce((sum, child) => sum + (ownCpuSeconds(Number(child)) ?? 0), own)
}

function ownCpuSeconds(pid: number | undefined): number | null {
  try {
    // Fields after the command's closing parenthesis: state is field 3, utime 14, stime 15 (clock ticks, 100 Hz on Linux).
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return null
  }
}

/** Loads `url` for `duration` s after a 2 s warm-up (V8 optimises the hot path first). */
export async function load(
  url: string,
  options: {
    connections: number
    duration: number
    pid?: number | undefined
    headers?: Record<string, string>
  },
): Promise<LoadFigures> {
  const { connections, duration, pid, headers = {} } = options
  await autocannon({ url, headers, connections, duration: 2 })
  const metricsUrl = new URL('/metrics', url).href
  await scrapeEventLoopLag(metricsUrl) // starts the server's next lag window
  const clientLag = eventLoopLag()
  const cpuBefore = cpuSeconds(pid)
  const r = await autocannon({ url, headers, connections, duration })
  const cpuAfter = cpuSeconds(pid)
  const clientEventLoopLag = clientLag()
  const serverEventLoopLag = await scrapeEventLoopLag(metricsUrl)
  const cpu =
    cpuBefore === null || cpuAfter === null || r.requests.total === 0
      ? null
      : Math.round(((cpuAfter - cpuBefore) / r.requests.total) * 1e7) / 10
  return {
    requestsPerSec: Math.round(r.requests.average),
    serverCpuUsPerRequest: cpu,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors,
    clientEventLoopLag,
    serverEventLoopLag,
  }
}

/** The machine a benchmark ran on, for its JSON document; `loadAtStart` is loadavg()[0] when it began. */
export function machineFacts(loadAtStart: number) {
  return {
    cpus: cpus().length,
    node: process.version,
    loadAverage1mAtStart: Math.round(loadAtStart * 100) / 100,
  }
}

/** The mean of several loads' figures (req/s rounded; CPU per request null if any run had none). */
export function meanFigures(xs: readonly LoadFigures[]) {
  const avg = (f: (x: LoadFigures) => number) =>
    Math.round((xs.reduce((s, x) => s + f(x), 0) / xs.length) * 100) / 100
  return {
    requestsPerSec: Math.round(avg((x) => x.requestsPerSec)),
    serverCpuUsPerRequest: xs.some((x) => x.serverCpuUsPerRequest === null)
      ? null
      : avg((x) => x.serverCpuUsPerRequest!),
    p50Ms: avg((x) => x.p50Ms),
    p99Ms: avg((x) => x.p99Ms),
    non2xx: xs.reduce((s, x) => s + x.non2xx, 0),
    errors: xs.reduce((s, x) => s + x.errors, 0),
    clientEventLoopLag: meanLag(xs.map((x) => x.clientEventLoopLag)),
    serverEventLoopLag: xs.some((x) => x.serverEventLoopLag === null)
      ? null
      : meanLag(xs.map((x) => x.serverEventLoopLag!)),
  }
}

/** Several runs' lag: the mean p50 and p99, and the largest max. */
export function meanLag(xs: readonly LagFigures[]): LagFigures {
  const avg = (f: (x: LagFigures) => number) =>
    Math.round((xs.reduce((s, x) => s + f(x), 0) / xs.length) * 10) / 10
  return {
    p50Ms: avg((x) => x.p50Ms),
    p99Ms: avg((x) => x.p99Ms),
    maxMs: Math.max(...xs.map((x) => x.maxMs)),
  }
}

/** `a` against `b`: the req/s ratio and the extra server CPU per request (null when unmeasured). */
export function compareFigures(
  a: ReturnType<typeof meanFigures>,
  b: ReturnType<typeof meanFigures>,
): { ratio: number; extraServerCpuUsPerRequest: number | null } {
  return {
    ratio: Math.round((a.requestsPerSec / b.requestsPerSec) * 1000) / 1000,
    extraServerCpuUsPerRequest:
      a.serverCpuUsPerRequest === null || b.serverCpuUsPerRequest === null
        ? null
        : Math.round((a.serverCpuUsPerRequest - b.serverCpuUsPerRequest) * 10) / 10,
  }
}

/** Event-loop lag of one process over a run, in ms (`nodejs_eventloop_lag_seconds` in /metrics is its live form). */
export interface LagFigures {
  p50Ms: number
  p99Ms: number
  maxMs: number
}

/** The sampling interval, prom-client's default too; the histogram's values include it, so it is taken off. */
const LAG_RESOLUTION_MS = 10
const lagMs = (ns: number) => Math.max(0, Math.round((ns / 1e6 - LAG_RESOLUTION_MS) * 10) / 10)

/**
 * Starts measuring this process's event-loop lag (perf_hooks.monitorEventLoopDelay): call it when
 * the measured work starts, and the function it returns, once, when it ends (that stops the
 * measuring). Where the service runs embedded, this is the service's lag too.
 */
export function eventLoopLag(): () => LagFigures {
  const h = monitorEventLoopDelay({ resolution: LAG_RESOLUTION_MS })
  h.enable()
  return () => {
    h.disable()
    return { p50Ms: lagMs(h.percentile(50)), p99Ms: lagMs(h.percentile(99)), maxMs: lagMs(h.max) }
  }
}

/** What a benchmark's JSON says of a process whose lag could not be read. */
export const LAG_NOT_SERVED = 'serves no /metrics: not measured'

/**
 * A child process's event-loop lag from its Prometheus `/metrics` (prom-client's
 * nodejs_eventloop_lag_{p50,p99,max}_seconds, which cover the time since the previous scrape): scrape
 * once when the measured work starts, and again at its end. Null when it does not answer them.
 */
export async function scrapeEventLoopLag(metricsUrl: string): Promise<LagFigures | null> {
  try {
    const text = await (await fetch(metricsUrl, { signal: AbortSignal.timeout(5000) })).text()
    const value = (name: string) => {
      const m = new RegExp(
        `^nodejs_eventloop_lag_${name}_seconds(?:\\{[^}]*\\})? (\\S+)$`,
        'm',
      ).exec(text)
      return m ? Number(m[1]) * 1e9 : NaN
    }
    const [p50, p99, max] = ['p50', 'p99', 'max'].map(value) as [number, number, number]
    if ([p50, p99, max].some(Number.isNaN)) return null
    return { p50Ms: lagMs(p50), p99Ms: lagMs(p99), maxMs: lagMs(max) }
  } catch {
    return null
  }
}
