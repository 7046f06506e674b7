/**
 * Where the process's pino lines go: `[DEFAULT] log_file` / `log_dir` (a file, appended to and
 * reopened on SIGHUP, so that logrotate can rename it and need no copytruncate), standard output,
 * and `use_journal` (standard output with journald's `<N>` priority prefix). The lines themselves
 * stay pino's JSON. One `LogOutput` lives as long as the process; a reload `apply`s a new target.
 */
import { closeSync, fstatSync, openSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { pino, type DestinationStream } from 'pino'
import { optionError, type Config } from '../config/config.js'
import { errorMessage } from '../domain/error-message.js'

type SonicBoom = ReturnType<typeof pino.destination>

const errorCode = (err: unknown) => (err as NodeJS.ErrnoException)?.code ?? errorMessage(err)

/** Where lines go, as decided from the configuration (`logTarget`). */
export interface LogTarget {
  /** Absolute path of the log file; undefined: none. */
  file: string | undefined
  /** Prefix each line on standard output with journald's `<N>` priority (use_journal). */
  journal: boolean
  /** Write to standard output: with no file (oslo.log's fallback), or for the journal. */
  stdout: boolean
}

/**
 * oslo.log's `_get_log_file_path`: log_file taken relative to log_dir when both are set; log_dir
 * alone gives `<log_dir>/cyborg-<service>.log` (oslo names it after the program, here
 * `cyborg-api`, `cyborg-conductor`, `cyborg-agent`, `cyborg-up`); neither, no file.
 */
export function logTarget(config: Config, service: string, cwd = process.cwd()): LogTarget {
  const { log_file, log_dir, use_journal } = config.DEFAULT
  const file =
    log_file !== undefined
      ? resolve(log_dir ?? cwd, log_file)
      : log_dir !== undefined
        ? join(log_dir, `cyborg-${service}.log`)
        : undefined
  return { file, journal: use_journal, stdout: file === undefined || use_journal }
}

/**
 * Opens (creating) the target's file once, synchronously, so that a file that cannot be written
 * fails start-up or a reload with the option that named it, not later on a background stream.
 * @throws ConfigError naming `[DEFAULT] log_file` (or `log_dir`) and the reason
 */
export function checkLogFile(config: Config, target: LogTarget): void {
  if (target.file === undefined) return
  try {
    closeSync(openSync(target.file, 'a'))
  } catch (err) {
    const option = config.DEFAULT.log_file === undefined ? 'log_dir' : 'log_file'
    throw optionError(
      config,
      'DEFAULT',
      option,
      `cannot open ${target.file} for appending: ${errorCode(err)}`,
    )
  }
}

/**
 * journald's priority of a pino line (syslog levels, as sd-daemon(3) prefixes read them): fatal 2,
 * error 3, warn 4, info 6, debug and trace 7. pino writes `{"level":NN,` first.
 */
export function journalPriority(line: string): number {
  const level = Number(/^\{"level":(\d+)/.exec(line)?.[1] ?? 30)
  return level >= 60 ? 2 : level >= 50 ? 3 : level >= 40 ? 4 : level >= 30 ? 6 : 7
}

/** Whether standard output is the journal's stream (systemd sets JOURNAL_STREAM to its `dev:inode`). */
export function stdoutIsJournal(env: Readonly<Record<string, string | undefined>>): boolean {
  const [dev, ino] = (env.JOURNAL_STREAM ?? '').split(':')
  if (dev === undefined || ino === undefined || dev === '' || ino === '') return false
  try {
    const st = fstatSync(1, { bigint: true })
    return String(st.dev) === dev && String(st.ino) === ino
  } catch {
    return false
  }
}

export interface LogOutputOptions {
  /** @default a synchronous pino destination on fd 1 */
  stdout?: DestinationStream
  /** Opens the log file. @default pino.destination({ dest, sync: false }) */
  openFile?: (path: string) => SonicBoom
  /** Where a file's write errors are reported (the logger cannot say it). @default stderr */
  onError?: (message: string) => void
}

/** A pino destination whose file can be reopened and whose target can change while pino holds it. */
export class LogOutput implements DestinationStream {
  readonly #stdout: DestinationStream
  readonly #openFile: (path: string) => SonicBoom
  readonly #onError: (message: string) => void
  #target: LogTarget
  #file: SonicBoom | undefined
  /** Settles when the file's last reopen has (or has failed). */
  #reopened: Promise<void> = Promise.resolve()

  constructor(target: LogTarget, options: LogOutputOptions = {}) {
    this.#stdout = options.stdout ?? pino.destination({ dest: 1, sync: true })
    this.#onError =
      options.onError ?? ((message) => void process.stderr.write(`cyborg: ${message}\n`))
    this.#openFile =
      options.openFile ?? ((dest) => pino.destination({ dest, sync: false, append: true }))
    this.#target = target
    this.#file = target.file === undefined ? undefined : this.#open(target.file)
  }

  /** The target in force. */
  get target(): LogTarget {
    return this.#target
  }

  write(line: string): void {
    this.#file?.write(line)
    if (!this.#target.stdout) return
    this.#stdout.write(this.#target.journal ? `<${journalPriority(line)}>${line}` : line)
  }

  /**
   * Switches to `target`: the same file is reopened (after a rename by logrotate, lines go to a
   * new file of that name), another file is opened and the old one closed once flushed.
   * Check the new file with `checkLogFile` first: an open that fails here is reported by onError.
   */
  apply(target: LogTarget): void {
    const old = this.#file
    if (target.file !== undefined && target.file === this.#target.file && old) {
      this.#reopened = new Promise<void>((done) => {
        old.once('ready', done)
        old.once('error', () => done())
      })
      old.reopen()
    } else {
      this.#file = target.file === undefined ? undefined : this.#open(target.file)
      if (old) void this.#end(old)
    }
    this.#target = target
  }

  /** Flushes and closes the file (tests; at exit pino's own hook flushes it). */
  async close(): Promise<void> {
    const file = this.#file
    this.#file = undefined
    if (file) await this.#end(file)
  }

  /**
   * Ends a file once its pending reopen is done: sonic-boom's end() during a reopen that waits for
   * a write drops the reopen and never closes (nor writes what it holds).
   */
  async #end(file: SonicBoom): Promise<void> {
    await this.#reopened
    await new Promise<void>((done) => {
      file.once('close', () => done())
      file.end()
    })
  }

  #open(path: string): SonicBoom {
    const file = this.#openFile(path)
    // Without a listener an error (a disk full, a directory removed before a reopen) would crash
    // the process; the lines written meanwhile go to the file descriptor still open, if any.
    file.on('error', (err: unknown) =>
      this.#onError(`log file ${path}: ${errorCode(err)}; log lines may be lost`),
    )
    return file
  }
}
