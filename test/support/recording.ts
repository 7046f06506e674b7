/**
 * Recording a fixture host with scripts/record-host.sh (docs/drivers.md, "Recording a host"): the
 * fixture's sys/ is the recorder's SYSFS_ROOT, and stand-in tools on its TOOLS_PATH print the
 * fixture's recorded command outputs (lspci, nvidia-smi, nvme), as the real tools would on that host.
 */
import { execFile } from 'node:child_process'
import { chmod, readdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { ROOT } from './service.js'
import { commandSlug } from '../../src/drivers/host-probe/fixture-host-probe.js'

export const RECORD_HOST = path.join(ROOT, 'scripts/record-host.sh')
export const FIXTURES = path.join(ROOT, 'src/drivers/__fixtures__')

/** The command lines the recorder runs, by tool (nvme per controller, nvme0 to nvme9). */
const LINES: Record<string, string[]> = {
  lspci: ['-nnD', '-nnkD'],
  'nvidia-smi': ['-q -x'],
  nvme: [
    'list -o json',
    ...Array.from({ length: 10 }, (_, n) => [
      `smart-log /dev/nvme${n} -o json`,
      `id-ctrl /dev/nvme${n} -o json`,
    ]).flat(),
  ],
}

/**
 * Writes into `bin` a stand-in for each tool that `fixtureDir` has a recording of: it prints the
 * recording of the command line it is given, and fails (exit 1) for any other. A tool with no
 * recording gets no stand-in: not installed.
 */
export async function fixtureTools(fixtureDir: string, bin: string): Promise<string[]> {
  const files = await readdir(fixtureDir)
  const made: string[] = []
  for (const [tool, lines] of Object.entries(LINES)) {
    const cases: string[] = []
    for (const line of lines) {
      const slug = commandSlug(tool, line.split(' '))
      const file = files.find((f) => f === slug || f.replace(/\.[^.]*$/, '') === slug)
      if (file) cases.push(`  '${line}') exec cat '${path.join(fixtureDir, file)}' ;;`)
    }
    if (cases.length === 0) continue
    const script = [
      '#!/bin/sh',
      'case "$*" in',
      ...cases,
      'esac',
      'echo "no recording: $*" >&2',
      'exit 1',
    ]
    await writeFile(path.join(bin, tool), `${script.join('\n')}\n`)
    await chmod(path.join(bin, tool), 0o755)
    made.push(tool)
  }
  return made
}

export interface Recorded {
  code: number
  stdout: string
  stderr: string
}

/** Runs the recorder into `out` with `env` (SYSFS_ROOT, TOOLS_PATH) over a plain PATH, in `cwd`. */
export function recordHost(
  out: string,
  env: Record<string, string>,
  cwd?: string,
): Promise<Recorded> {
  return new Promise((resolve) => {
    execFile(
      RECORD_HOST,
      [out],
      { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, cwd, timeout: 60_000 },
      (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr })
      },
    )
  })
}
