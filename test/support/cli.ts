/**
 * Runs the built `cyborg` command (bin/cyborg) as an operator would, with only PATH, HOME and `env`.
 * bin/cyborg runs the compiled dist/: importing this module first rebuilds it when a source under
 * src/ is newer than its output (about a second; nothing when it is current), so a test never runs
 * stale code (docs/build.md). Every test that spawns bin/cyborg takes BIN from here.
 */
import assert from 'node:assert/strict'
import { execFile, execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export const BIN = fileURLToPath(new URL('../../bin/cyborg', import.meta.url))

execFileSync(
  process.execPath,
  [fileURLToPath(new URL('../../scripts/build.mjs', import.meta.url)), '--if-stale'],
  { stdio: ['ignore', 'inherit', 'inherit'] },
)

/** How one run ended: its exit code and what it printed. */
export interface Run {
  code: number
  stdout: string
  stderr: string
}

export function cyborg(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      BIN,
      args,
      {
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', ...env },
        timeout: 60_000,
      },
      (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr })
      },
    )
  })
}

/** Runs a command with --format json, expects exit 0 and nothing on stderr, and returns the parsed output. */
export async function cyborgJson<T>(args: string[], env: Record<string, string>): Promise<T> {
  const run = await cyborg([...args, '--format', 'json'], env)
  assert.equal(run.code, 0, `${args.join(' ')}: ${run.stderr}`)
  assert.equal(run.stderr, '')
  return JSON.parse(run.stdout) as T
}

/** Expects exit 1 and exactly one line on stderr, matching `pattern`. */
export async function cyborgFails(
  args: string[],
  env: Record<string, string>,
  pattern: RegExp,
): Promise<Run> {
  const run = await cyborg(args, env)
  assert.equal(run.code, 1, `${args.join(' ')} should fail: ${run.stdout}`)
  assert.match(run.stderr, /^[^\n]+\n$/, 'one line on stderr')
  assert.match(run.stderr, pattern)
  return run
}
