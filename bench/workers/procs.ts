/**
 * CPU time per process from /proc for bench/api-workers.ts: a process and its children (an API's
 * node:cluster workers), every PostgreSQL process (its backends serve the reads), and the machine
 * as a whole (/proc/stat), so that a run says where the two cores went.
 */
import { readdirSync, readFileSync } from 'node:fs'

const TICK_S = 0.01 // clock ticks are 1/100 s on Linux

/** utime + stime of `pid` in seconds; 0 when it is gone. */
export function cpuOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return (Number(fields[11]) + Number(fields[12])) * TICK_S
  } catch {
    return 0
  }
}

/** The direct children of `pid` (a cluster primary's workers). */
export function childrenOf(pid: number): number[] {
  try {
    const text = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim()
    return text === '' ? [] : text.split(/\s+/).map(Number)
  } catch {
    return []
  }
}

/**
 * CPU seconds of every process whose command line contains `needle` (PostgreSQL's backends name
 * their database in it), by pid: compare two with `grownBy`, so that a process that exits meanwhile
 * does not count.
 */
export function cpuByPid(needle: string): Map<number, number> {
  const found = new Map<number, number>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(needle))
        found.set(Number(entry), cpuOf(Number(entry)))
    } catch {
      // gone meanwhile
    }
  }
  return found
}

/** CPU seconds the processes of `after` used since `before` (a new one: all it used). */
export function grownBy(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0
  for (const [pid, cpu] of after) total += cpu - (before.get(pid) ?? 0)
  return total
}

/** The machine's busy and total CPU seconds so far, all cores together. */
export function machineCpu(): { busy: number; total: number } {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/)
  const n = ticks.map(Number)
  const total = n.reduce((a, b) => a + b, 0)
  const idle = n[3]! + n[4]! // idle + iowait
  return { busy: (total - idle) * TICK_S, total: total * TICK_S }
}

/** A snapshot of named CPU counters (seconds); `cpuPerRequest` turns two into µs per request. */
export type CpuSnapshot = Record<string, number>

export function cpuPerRequest(
  before: CpuSnapshot,
  after: CpuSnapshot,
  requests: number,
): Record<string, number> {
  const out: Record<string, number> = {}
  for (const [name, value] of Object.entries(after))
    out[name] =
      Math.round((((value - (before[name] ?? 0)) * 1e6) / Math.max(requests, 1)) * 10) / 10
  return out
}
