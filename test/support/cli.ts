/** Runs the built `cyborg` command (bin/cyborg) as an operator would, with only PATH, HOME and `env`. */
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export const BIN = fileURLToPath(new URL('../../bin/cyborg', import.meta.url))

/** How one run ended: its exit code and what it printed. */
export interface Run {
  code: number
  stdout: string
  stderr: string
}

export function cyborg(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(BIN, args, { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr })
    })
  })
}
