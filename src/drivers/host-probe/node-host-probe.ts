/**
 * The real HostProbe: files through node:fs/promises, commands through execFile (never a shell),
 * each with a time limit. This is the only file under src/drivers that touches the OS.
 */
import { access, readdir, readFile, writeFile } from 'node:fs/promises'
import { execFile, type ExecFileException } from 'node:child_process'
import { join } from 'node:path'
import type { HostProbe } from '../driver.js'
import { DriverError } from '../../domain/errors.js'

/** Options of {@link createNodeHostProbe}. */
export interface NodeHostProbeOptions {
  /** A command running longer is killed and fails with code COMMAND_TIMEOUT (a call may ask for more). @default 30000 */
  execTimeoutMs?: number
  /** Largest stdout accepted from a command, in bytes. @default 16777216 */
  maxOutputBytes?: number
  /**
   * Where the host's file system is seen (`[agent] host_root`): `/` normally; the mount point of the
   * host's root when the agent runs in a container. Files are read and written under it; commands
   * run as they are. @default '/'
   */
  root?: string
}

/** Creates a HostProbe over the real host. */
export function createNodeHostProbe(options: NodeHostProbeOptions = {}): HostProbe {
  const { execTimeoutMs = 30_000, maxOutputBytes = 16 * 1024 * 1024, root = '/' } = options
  const at = root === '/' ? (p: string) => p : (p: string) => join(root, p)
  return {
    async readFile(path) {
      try {
        return await readFile(at(path), 'utf8')
      } catch (err) {
        throw fsError('read', path, err)
      }
    },
    async readDir(path) {
      try {
        return (await readdir(at(path))).sort()
      } catch (err) {
        throw fsError('list', path, err)
      }
    },
    async exists(path) {
      return access(at(path)).then(
        () => true,
        () => false,
      )
    },
    async writeFile(path, data) {
      try {
        await writeFile(at(path), data, 'utf8')
      } catch (err) {
        throw fsError('write', path, err)
      }
    },
    exec(command, args, execOptions = {}) {
      const timeoutMs = execOptions.timeoutMs ?? execTimeoutMs
      return new Promise((resolve, reject) => {
        execFile(
          command,
          [...args],
          {
            shell: false,
            timeout: timeoutMs,
            maxBuffer: maxOutputBytes,
            encoding: 'utf8',
            windowsHide: true,
          },
          (err, stdout, stderr) => {
            if (!err) return resolve(stdout)
            reject(execError(command, args, err, stderr, timeoutMs))
          },
        )
      })
    },
  }
}

function fsError(verb: string, path: string, cause: unknown): DriverError {
  const errno = (cause as NodeJS.ErrnoException).code
  return new DriverError(`cannot ${verb} ${path}: ${errno ?? String(cause)}`, {
    code: errno === 'ENOENT' ? 'HOST_PATH_NOT_FOUND' : 'HOST_IO_ERROR',
    details: { path },
    cause,
  })
}

function execError(
  command: string,
  args: readonly string[],
  err: ExecFileException,
  stderr: string,
  timeoutMs: number,
): DriverError {
  const details = { command, args: [...args], stderr: stderr.slice(-2000) }
  if (err.code === 'ENOENT') {
    return new DriverError(`command not found: ${command}`, {
      code: 'COMMAND_NOT_FOUND',
      details,
      cause: err,
    })
  }
  if (err.killed && err.signal === 'SIGTERM') {
    return new DriverError(`${command} timed out after ${timeoutMs} ms`, {
      code: 'COMMAND_TIMEOUT',
      details,
      cause: err,
    })
  }
  const exit =
    typeof err.code === 'number' ? `exit code ${err.code}` : (err.signal ?? err.code ?? err.message)
  return new DriverError(
    `${command} ${args.join(' ')} failed (${exit}): ${stderr.trim().slice(-500)}`,
    {
      code: 'COMMAND_FAILED',
      details: { ...details, exitCode: typeof err.code === 'number' ? err.code : null },
      cause: err,
    },
  )
}
