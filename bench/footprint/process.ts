/**
 * The processes bench/footprint.ts measures: `cyborg <command>` started compiled (bin/cyborg, which
 * runs dist/), under tsx (the sources, as before issue 28), or through `npm start`; their VmRSS and
 * CPU time from /proc, and a stop that waits for the exit.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { cpuSeconds } from '../support/load.js'
import { freePort, NODE, ROOT } from '../../test/support/service.js'

/** How a process is started: `npm` is `npm start` (compiled, through npm, as the README says). */
export type Runner = 'compiled' | 'tsx' | 'npm'

export interface Cyborg {
  child: ChildProcess
  /** The pid whose memory and CPU are read: the node process itself (under npm, its child). */
  pid(): number
  output(): string
  stop(): Promise<void>
}

function command(runner: Runner, args: string[]): [string, string[]] {
  if (runner === 'compiled') return [path.join(ROOT, 'bin/cyborg'), args]
  if (runner === 'tsx')
    return [NODE, ['--import', 'tsx', path.join(ROOT, 'src/main/cli.ts'), ...args]]
  return ['npm', ['start', '--silent']]
}

/** The node process npm started (npm → sh → bin/cyborg's exec of node). */
function nodeBelow(pid: number): number {
  for (let depth = 0; depth < 4; depth++) {
    let children: string
    try {
      children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim()
    } catch {
      return pid
    }
    if (children === '') return pid
    pid = Number(children.split(' ')[0])
  }
  return pid
}

/** Starts `cyborg <args>` with only PATH, HOME and `env`, in its own process group. */
export function startCyborg(runner: Runner, args: string[], env: Record<string, string>): Cyborg {
  const [file, argv] = command(runner, args)
  const child = spawn(file, argv, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  let out = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (out += d.toString()))
  const closed = new Promise((resolve) => child.once('close', resolve))
  return {
    child,
    pid: () => (runner === 'npm' ? nodeBelow(child.pid!) : child.pid!),
    output: () => out,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGTERM')
      await closed
    },
  }
}

/** VmRSS in MB (one decimal), 0 when the process is gone. */
export function rssMb(pid: number): number {
  try {
    const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0)
    return Math.round(kb / 102.4) / 10
  } catch {
    return 0
  }
}

/**
 * Where a process's resident memory is, from /proc/<pid>/smaps, in MB: `nodeBinary` is the resident
 * part of the node executable's own mappings (its code and the ICU data built into it: file pages
 * every Node process on the host shares); `private` is what only this process holds; `pss` its
 * proportional share of everything.
 */
export function memoryMb(pid: number) {
  const sums = { rss: 0, pss: 0, private: 0, nodeBinary: 0 }
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/smaps`, 'utf8')
  } catch {
    return null
  }
  let binary = false
  for (const line of text.split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line)
    if (head) binary = head[1]!.endsWith('/bin/node')
    const m = /^(Rss|Pss|Private_Clean|Private_Dirty):\s+(\d+) kB/.exec(line)
    if (!m) continue
    const kb = Number(m[2])
    if (m[1] === 'Rss') {
      sums.rss += kb
      if (binary) sums.nodeBinary += kb
    } else if (m[1] === 'Pss') sums.pss += kb
    else sums.private += kb
  }
  const mb = (kb: number) => Math.round(kb / 102.4) / 10
  return {
    rss: mb(sums.rss),
    pss: mb(sums.pss),
    private: mb(sums.private),
    nodeBinary: mb(sums.nodeBinary),
  }
}

export const cpuMs = (pid: number) => Math.round((cpuSeconds(pid) ?? 0) * 1000)

/** Polls `check` every 5 ms until it is true; throws with the process's output after `ms`. */
export async function until(c: Cyborg, ms: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms
  for (;;) {
    if (c.child.exitCode !== null) throw new Error(`cyborg exited:\n${c.output()}`)
    if (await check().catch(() => false)) return
    if (Date.now() > deadline) throw new Error(`not ready within ${ms} ms:\n${c.output()}`)
    await sleep(5)
  }
}

export { freePort }

/** V8's heap as the process's /metrics reports it (prom-client's default metrics), in MB. */
export async function heapMb(metricsUrl: string) {
  try {
    const text = await (await fetch(metricsUrl, { signal: AbortSignal.timeout(5000) })).text()
    const mb = (re: RegExp) => Math.round(Number(re.exec(text)?.[1] ?? NaN) / 104857.6) / 10
    return {
      heapTotal: mb(/^nodejs_heap_size_total_bytes (\S+)$/m),
      heapUsed: mb(/^nodejs_heap_size_used_bytes (\S+)$/m),
      newSpaceTotal: mb(/^nodejs_heap_space_size_total_bytes\{space="new"\} (\S+)$/m),
      oldSpaceTotal: mb(/^nodejs_heap_space_size_total_bytes\{space="old"\} (\S+)$/m),
      codeSpaceTotal: mb(/^nodejs_heap_space_size_total_bytes\{space="code"\} (\S+)$/m),
      largeObjectTotal: mb(/^nodejs_heap_space_size_total_bytes\{space="large_object"\} (\S+)$/m),
      external: mb(/^nodejs_external_memory_bytes (\S+)$/m),
    }
  } catch {
    return null
  }
}
