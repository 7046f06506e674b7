/**
 * Where a process's CPU went, from the V8 CPU profiles `--cpu-prof` writes at its exit: self time
 * summed per function (name, file, line) and per package or source folder, the largest first.
 */
import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  hitCount?: number
}
interface CpuProfile {
  nodes: ProfileNode[]
  startTime: number
  endTime: number
  samples: number[]
  timeDeltas: number[]
}

/** A measured load's span on the monotonic clock V8's profiles use (process.hrtime), in µs. */
export type Window = readonly [number, number]

/** Now on that clock, µs. */
export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n)

/** Samples per node id: all of them, or those taken inside one of `windows`. */
function hitsInWindows(profile: CpuProfile, windows: readonly Window[] | undefined) {
  const hits = new Map<number, number>()
  let t = profile.startTime
  profile.samples.forEach((id, i) => {
    t += profile.timeDeltas[i] ?? 0
    if (!windows || windows.some(([a, b]) => t >= a && t <= b))
      hits.set(id, (hits.get(id) ?? 0) + 1)
  })
  return hits
}

/** node_modules/<pkg>, src/<folder>, node:internal or (program)/(garbage collector)/(idle). */
function area(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native)'
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (pkg) return pkg[1]!
  const src = /\/(src|bench|test)\/([^/]+)/.exec(url)
  if (src) return `${src[1]}/${src[2]}`
  if (url.startsWith('node:')) return 'node:internal'
  return url
}

/**
 * The top `limit` functions and areas by self time of every profile in `dir`, in ms; only the
 * samples inside `windows` (the measured loads) when given, and per cycle when `cycles` is.
 */
export async function summarizeProfiles(
  dir: string,
  options: { windows?: readonly Window[]; cycles?: number; limit?: number } = {},
) {
  const { windows, cycles, limit = 15 } = options
  const files = (await readdir(dir).catch(() => [])).filter((f) => f.endsWith('.cpuprofile'))
  const byFunction = new Map<string, number>()
  const byArea = new Map<string, number>()
  let totalMs = 0
  for (const f of files) {
    const profile = JSON.parse(await readFile(path.join(dir, f), 'utf8')) as CpuProfile
    const msPerSample =
      profile.samples.length > 0
        ? (profile.endTime - profile.startTime) / 1000 / profile.samples.length
        : 0
    const hits = hitsInWindows(profile, windows)
    for (const n of profile.nodes) {
      const ms = (hits.get(n.id) ?? 0) * msPerSample
      if (ms === 0) continue
      const { functionName, url, lineNumber } = n.callFrame
      const key = `${functionName || '(anonymous)'} ${url.replace(/^.*\/(node_modules|src)\//, '$1/')}:${lineNumber + 1}`
      byFunction.set(key, (byFunction.get(key) ?? 0) + ms)
      const a = area(url, functionName)
      byArea.set(a, (byArea.get(a) ?? 0) + ms)
      if (functionName !== '(idle)') totalMs += ms
    }
  }
  const top = (m: Map<string, number>) =>
    [...m.entries()]
      .filter(([k]) => !k.startsWith('(idle)'))
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([k, ms]) => ({
        what: k,
        ms: Math.round(ms),
        ...(cycles ? { msPerCycle: Math.round((ms / cycles) * 100) / 100 } : {}),
        share: Math.round((ms / totalMs) * 1000) / 10,
      }))
  return {
    profiles: files.length,
    busyMs: Math.round(totalMs),
    ...(cycles ? { busyMsPerCycle: Math.round((totalMs / cycles) * 100) / 100 } : {}),
    byArea: top(byArea),
    byFunction: top(byFunction),
  }
}
