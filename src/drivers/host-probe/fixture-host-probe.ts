/**
 * A HostProbe that replays a recorded host from a fixture directory, so drivers run in tests
 * without the hardware (the fake-sysfs idea of OpenStack Cyborg's tests, checked in):
 *
 * - host path `/sys/bus/pci/...` is read from `<dir>/sys/bus/pci/...`;
 * - command `lspci -nnn -D` replays the file named in `<dir>/commands.json`
 *   (`{ "lspci -nnn -D": "lspci-nnn-D.txt" }`), else the file in `<dir>` whose name without its
 *   extension is the command line with spaces and dashes collapsed (`lspci-nnn-D.txt`);
 *   an unrecorded command fails like a missing one (COMMAND_NOT_FOUND);
 * - a command line given in `options.outputs` answers that text (for commands that change the
 *   host, such as FPGA programming tools, whose output is not worth a recording);
 * - every `exec` is recorded in `execs` (answered or not), with its options;
 * - writes are recorded in `writes` and read back, never written to the fixture;
 * - a count written into `<pf>/sriov_numvfs` of a PF whose fixture has `sriov_totalvfs` makes its
 *   VFs appear or go as the kernel would (fixture-sriov.ts);
 * - `options.failWrite` makes chosen writes fail, to test what a driver does then.
 */
import path from 'node:path'
import type { ExecOptions, HostProbe } from '../driver.js'
import { createNodeHostProbe } from './node-host-probe.js'
import { createSriovTree } from './fixture-sriov.js'
import { DriverError } from '../../domain/errors.js'

/** A HostProbe over a fixture directory, with the writes drivers made. */
export interface FixtureHostProbe extends HostProbe {
  /** Every `writeFile`, in order; one that failed is marked `failed`. */
  readonly writes: readonly { path: string; data: string; failed?: true }[]
  /** Every `exec`, in order, including the ones that failed. */
  readonly execs: readonly { command: string; args: string[]; options?: ExecOptions }[]
}

/** Options of {@link createFixtureHostProbe}. */
export interface FixtureHostProbeOptions {
  /** Command line → file (relative to the fixture dir); merged over `commands.json`. @default {} */
  commands?: Record<string, string>
  /** Command line → its stdout, answered without a recording file. @default {} */
  outputs?: Record<string, string>
  /**
   * Called before every write takes effect: `true` fails it with an I/O error (DriverError
   * `HOST_IO_ERROR`, as the node probe's), an Error fails it with that error. @default none fails
   */
  failWrite?: (path: string, data: string) => boolean | Error
}

/** The file name a command line replays from: `nvidia-smi -q -x` → `nvidia-smi-q-x`. */
export function commandSlug(command: string, args: readonly string[]): string {
  return [command, ...args]
    .join(' ')
    .replace(/[\s-]+/g, '-')
    .replace(/[^A-Za-z0-9._-]/g, '_')
}

/** Creates a probe that replays `dir` (an absolute path or one relative to the working directory). */
export function createFixtureHostProbe(
  dir: string,
  options: FixtureHostProbeOptions = {},
): FixtureHostProbe {
  const root = path.resolve(dir)
  const real = createNodeHostProbe({ execTimeoutMs: 5000 })
  const overlay = new Map<string, string>()
  const writes: { path: string; data: string; failed?: true }[] = []
  const execs: { command: string; args: string[]; options?: ExecOptions }[] = []
  let commands: Promise<Record<string, string>> | undefined

  /** Maps a host path into the fixture; refuses relative paths and escapes. */
  const inFixture = (hostPath: string): string => {
    if (!path.posix.isAbsolute(hostPath)) {
      throw new DriverError(`host paths must be absolute: ${hostPath}`, {
        code: 'HOST_PATH_INVALID',
      })
    }
    return path.join(root, path.posix.normalize(hostPath))
  }

  const loadCommands = async (): Promise<Record<string, string>> => {
    const file = path.join(root, 'commands.json')
    const recorded = (await real.exists(file))
      ? (JSON.parse(await real.readFile(file)) as Record<string, string>)
      : {}
    return { ...recorded, ...options.commands }
  }

  const tree = createSriovTree({
    async readFile(hostPath) {
      const written = overlay.get(path.posix.normalize(hostPath))
      return written ?? real.readFile(inFixture(hostPath))
    },
    async readDir(hostPath) {
      return real.readDir(inFixture(hostPath))
    },
    async exists(hostPath) {
      return overlay.has(path.posix.normalize(hostPath)) || real.exists(inFixture(hostPath))
    },
  })

  return {
    writes,
    execs,
    readFile: (hostPath) => tree.readFile(hostPath),
    readDir: (hostPath) => tree.readDir(hostPath),
    exists: (hostPath) => tree.exists(hostPath),
    async writeFile(hostPath, data) {
      inFixture(hostPath)
      try {
        const failure = options.failWrite?.(hostPath, data)
        if (failure instanceof Error) throw failure
        if (failure === true)
          throw new DriverError(`cannot write ${hostPath}: EIO`, {
            code: 'HOST_IO_ERROR',
            details: { path: hostPath },
          })
        if (!(await tree.write(hostPath, data))) overlay.set(path.posix.normalize(hostPath), data)
      } catch (err) {
        writes.push({ path: hostPath, data, failed: true })
        throw err
      }
      writes.push({ path: hostPath, data })
    },
    async exec(command, args, execOptions) {
      execs.push({ command, args: [...args], ...(execOptions ? { options: execOptions } : {}) })
      const line = [command, ...args].join(' ')
      const output = options.outputs?.[line]
      if (output !== undefined) return output
      commands ??= loadCommands()
      const named = (await commands)[line]
      if (named !== undefined) return real.readFile(path.join(root, named))
      const slug = commandSlug(command, args)
      const match = (await real.readDir(root)).find(
        (f) => f === slug || f.replace(/\.[^.]*$/, '') === slug,
      )
      if (match !== undefined) return real.readFile(path.join(root, match))
      throw new DriverError(
        `command not found: ${command} (no recording of "${line}" in ${root})`,
        {
          code: 'COMMAND_NOT_FOUND',
          details: { command, args: [...args] },
        },
      )
    },
  }
}

/**
 * The fixture's tree with the content of every file (and command output) replaced by one of
 * `contents`, picked by a hash of the path: for fuzz tests that feed drivers garbage in the places
 * they read. A path missing from the fixture stays missing.
 */
export function garbledFixtureHostProbe(dir: string, contents: readonly string[]): HostProbe {
  const real = createFixtureHostProbe(dir)
  const pick = (p: string): string =>
    contents[[...p].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7) % contents.length]!
  return {
    ...real,
    readFile: async (p) => {
      await real.readFile(p)
      return pick(p)
    },
    exec: async (c, a) => pick([c, ...a].join(' ')),
  }
}
