/**
 * Starts `cyborg <command>` as a real child process on a free port with a temporary state dir,
 * waits until it answers, and stops it with SIGTERM. Used by the cross-process and e2e tests.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
export const NODE = path.join(ROOT, 'node_modules/.bin/node')
export const CLI = path.join(ROOT, 'src/main/cli.ts')

/** A TCP port that was free a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address ? address.port : 0
      server.close(() => resolve(port))
    })
  })
}

export interface RunningService {
  url: string
  port: number
  stateDir: string
  child: ChildProcess
  /** Everything the process printed so far. */
  output(): string
  /** SIGTERM, then wait for exit; resolves with the exit code. */
  stop(): Promise<number | null>
}

export interface StartOptions {
  command?: string[]
  env?: Record<string, string>
  /**
   * Resolves true once the service is ready, given its URL and what it printed so far.
   * @default GET /healthcheck answers 200 (see {@link printed} for services without HTTP)
   */
  ready?: (url: string, output: string) => Promise<boolean>
  /** @default 30000 */
  timeoutMs?: number
  /**
   * `[DEFAULT] state_path`, e.g. the one of a killed process to restart with its cache; the caller
   * owns it (stop() leaves it). @default a new temporary directory, removed by stop()
   */
  stateDir?: string
  /** Another checkout to run instead of this one (a benchmark's baseline). @default this checkout */
  root?: string
  /**
   * Runs the checkout's compiled build (dist/main/cli.js, rebuilt first when a source is newer:
   * docs/build.md), as bin/cyborg does, instead of the sources under tsx. @default false
   */
  compiled?: boolean
  /**
   * Node's own arguments before the script, for flags NODE_OPTIONS refuses (V8's, such as
   * `--memory-saver-mode`, which bin/cyborg gives some commands). @default none
   */
  nodeArgs?: string[]
}

/** The node arguments that run `cyborg` of `root`: its compiled build, or its sources under tsx. */
export function cyborgArgv(root: string, compiled: boolean): string[] {
  if (!compiled) return ['--import', 'tsx', path.join(root, 'src/main/cli.ts')]
  execFileSync(NODE, [path.join(root, 'scripts/build.mjs'), '--if-stale'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  return [path.join(root, 'dist/main/cli.js')]
}

/** A `ready` check for services without HTTP (conductor, agent): a log line matching `pattern`. */
export const printed =
  (pattern: RegExp) =>
  async (_url: string, output: string): Promise<boolean> =>
    pattern.test(output)

/** Runs a one-shot `cyborg <command>` (e.g. `db sync`) to its end. */
export async function runCommand(
  command: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; output: string }> {
  const child = spawn(NODE, ['--import', 'tsx', CLI, ...command], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout.on('data', (d: Buffer) => (output += d.toString()))
  child.stderr.on('data', (d: Buffer) => (output += d.toString()))
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)))
  return { code, output }
}

export async function startService(options: StartOptions = {}): Promise<RunningService> {
  const { command = ['up'], env = {}, timeoutMs = 30_000, root = ROOT, compiled = false } = options
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const stateDir = options.stateDir ?? (await mkdtemp(path.join(tmpdir(), 'cyborg-test-')))
  const nodeArgs = options.nodeArgs ?? []
  const child = spawn(NODE, [...nodeArgs, ...cyborgArgv(root, compiled), ...command], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/root',
      CYBORG_API__PORT: String(port),
      CYBORG_DEFAULT__STATE_PATH: stateDir,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()))
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  )
  const ready = options.ready ?? (async (u: string) => (await fetch(`${u}/healthcheck`)).ok)
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (child.exitCode !== null) throw new Error(`cyborg exited with ${child.exitCode}:\n${out}`)
    try {
      if (await ready(url, out)) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`cyborg did not become ready within ${timeoutMs} ms:\n${out}`)
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  return {
    url,
    port,
    stateDir,
    child,
    output: () => out,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM')
      const code = await exited
      if (options.stateDir === undefined) await rm(stateDir, { recursive: true, force: true })
      return code
    },
  }
}
