/**
 * A HostProbe that only reads (`cyborg agent probe`, docs/drivers.md "What the agent sees"): reads,
 * listings, existence checks and read-only commands (read-only-commands.ts) pass through to the
 * probe it wraps; `writeFile` and every other command are refused with DriverError `HOST_READ_ONLY`
 * naming the operation, before anything reaches the host. Every call, refused ones included, is
 * recorded in `accesses` with its outcome and how long it took.
 */
import type { ExecOptions, HostProbe } from '../driver.js'
import { AppError, DriverError } from '../../domain/errors.js'
import { errorMessage } from '../../domain/error-message.js'
import { isReadOnlyCommand } from './read-only-commands.js'

/** One call of the probe. */
export interface HostAccess {
  op: 'read' | 'list' | 'exists' | 'exec' | 'write'
  /** The path, or the command line (`nvidia-smi -q -x`). */
  target: string
  /**
   * `ok`; `missing` (no such file, `exists` false, command not installed); `failed` (any other
   * error, e.g. a non-zero exit); `refused` (a write or a command that may change the host).
   */
  outcome: 'ok' | 'missing' | 'failed' | 'refused'
  /** The error's code and message, when not ok. */
  error?: string
  /** Milliseconds the call took (0 for a refused one). */
  ms: number
}

export interface ReadOnlyHostProbe extends HostProbe {
  /** Every call, in the order they started. */
  readonly accesses: readonly HostAccess[]
}

const MISSING = new Set(['HOST_PATH_NOT_FOUND', 'COMMAND_NOT_FOUND'])

/** Wraps `probe`; `now` (milliseconds) times the calls. @default performance.now */
export function createReadOnlyHostProbe(
  probe: HostProbe,
  now: () => number = () => performance.now(),
): ReadOnlyHostProbe {
  const accesses: HostAccess[] = []

  const timed = async <T>(
    op: HostAccess['op'],
    target: string,
    call: () => Promise<T>,
    missing?: (value: T) => boolean,
  ): Promise<T> => {
    const access: HostAccess = { op, target, outcome: 'ok', ms: 0 }
    accesses.push(access)
    const started = now()
    try {
      const value = await call()
      if (missing?.(value)) access.outcome = 'missing'
      return value
    } catch (err) {
      const code = err instanceof AppError ? err.code : undefined
      access.outcome = code !== undefined && MISSING.has(code) ? 'missing' : 'failed'
      access.error = `${code ?? 'ERROR'}: ${errorMessage(err)}`
      throw err
    } finally {
      access.ms = Math.round((now() - started) * 1000) / 1000
    }
  }

  /** Records a refused call and rejects with the error that names it. */
  const refuse = (op: 'write' | 'exec', target: string, what: string): Promise<never> => {
    const err = new DriverError(`read-only host probe: refused ${what}`, {
      code: 'HOST_READ_ONLY',
      details: { operation: op, target },
    })
    accesses.push({
      op,
      target,
      outcome: 'refused',
      error: `HOST_READ_ONLY: ${err.message}`,
      ms: 0,
    })
    return Promise.reject(err)
  }

  return {
    accesses,
    readFile: (path) => timed('read', path, () => probe.readFile(path)),
    readDir: (path) => timed('list', path, () => probe.readDir(path)),
    exists: (path) =>
      timed(
        'exists',
        path,
        () => probe.exists(path),
        (found) => !found,
      ),
    exec(command: string, args: readonly string[], options?: ExecOptions) {
      const line = [command, ...args].join(' ')
      if (!isReadOnlyCommand(command, args))
        return refuse(
          'exec',
          line,
          `exec "${line}": not a read-only command (it may change the host)`,
        )
      return timed('exec', line, () => probe.exec(command, args, options))
    },
    writeFile(path: string) {
      return refuse('write', path, `writeFile ${path}`)
    },
  }
}
