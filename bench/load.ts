/**
 * One autocannon load with a warm-up, and the server's CPU time per request from /proc, which
 * other load on a shared machine disturbs less than req/s. Shared by the HTTP benchmarks.
 */
import { readFileSync } from 'node:fs'
import { cpus } from 'node:os'
import autocannon from 'autocannon'

export interface LoadFigures {
  requestsPerSec: number
  /** The server process's CPU time (user + system) per request in the measured run; null off Linux. */
  serverCpuUsPerRequest: number | null
  p50Ms: number
  p99Ms: number
  non2xx: number
  errors: number
}

/** CPU seconds (user + system) a process has used so far, from /proc; null where there is none. */
export function cpuSeconds(pid: number | undefined): number | null {
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
  const cpuBefore = cpuSeconds(pid)
  const r = await autocannon({ url, headers, connections, duration })
  const cpuAfter = cpuSeconds(pid)
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
