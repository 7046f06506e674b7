/**
 * The process logger: pino, one JSON line per event, on stdout or in `[DEFAULT] log_file`
 * (log-output.ts). The level comes from `CYBORG_LOG_LEVEL` when set, else `[DEFAULT] debug`
 * (true → debug, false → info). `reconfigureLogger` applies a reloaded configuration.
 */
import cluster from 'node:cluster'
import { pino, type DestinationStream, type Logger } from 'pino'
import { ConfigError } from '../domain/errors.js'
import type { Config } from '../config/config.js'
import { checkLogFile, LogOutput, logTarget, stdoutIsJournal } from './log-output.js'

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

/** Keys whose values never reach a log line, wherever a caller puts them. */
const REDACT = [
  'password',
  'token',
  '*.password',
  '*.token',
  '*.*.password',
  '*.*.token',
  'headers.authorization',
  'headers["x-auth-token"]',
  'headers["x-service-token"]',
  'headers["x-subject-token"]',
  '*.headers.authorization',
  '*.headers["x-auth-token"]',
  '*.headers["x-service-token"]',
  '*.headers["x-subject-token"]',
]

/** @throws ConfigError when CYBORG_LOG_LEVEL is not a pino level */
export function logLevel(
  config: Config,
  env: Readonly<Record<string, string | undefined>>,
): LogLevel {
  const fromEnv = env.CYBORG_LOG_LEVEL
  if (fromEnv !== undefined && fromEnv !== '') {
    const level = fromEnv.trim().toLowerCase()
    if (!(LOG_LEVELS as readonly string[]).includes(level)) {
      throw new ConfigError(
        `CYBORG_LOG_LEVEL = "${fromEnv}": expected one of ${LOG_LEVELS.join(', ')}`,
      )
    }
    return level as LogLevel
  }
  return config.DEFAULT.debug ? 'debug' : 'info'
}

export interface LoggerOptions {
  /** The command, bound to every line as `service` (`up`, `api`, …). */
  service: string
  env: Readonly<Record<string, string | undefined>>
  /** @default the configuration's (log_file, log_dir, use_journal): a LogOutput */
  destination?: DestinationStream
}

/** The outputs createLogger made, and the service each logger was made for. */
const outputs = new WeakMap<Logger, { output: LogOutput; service: string }>()

/**
 * The process logger.
 * @throws ConfigError when CYBORG_LOG_LEVEL is not a level or the log file cannot be opened
 */
export function createLogger(config: Config, options: LoggerOptions): Logger {
  let destination = options.destination
  let output: LogOutput | undefined
  if (destination === undefined) {
    const target = logTarget(config, options.service)
    checkLogFile(config, target)
    destination = output = new LogOutput(target)
  }
  const log = pino(
    {
      level: logLevel(config, options.env),
      base: {
        service: options.service,
        hostname: config.DEFAULT.host,
        pid: process.pid,
        // A worker of `cyborg api` (api-cluster.ts): its number, 1, 2, … (a restarted one gets the next).
        ...(cluster.isWorker ? { worker: cluster.worker?.id } : {}),
      },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT, censor: '***' },
    },
    destination,
  )
  if (output) {
    outputs.set(log, { output, service: options.service })
    warnIfNotJournal(log, config, options.env)
  }
  return log
}

/**
 * Applies a reloaded configuration to a logger made by createLogger: its level (children made
 * without a level of their own follow it: pino children inherit through the prototype) and its
 * output (the log file reopened, or another one opened).
 * @throws ConfigError (nothing changed) when the level is invalid or the new file cannot be opened
 */
export function reconfigureLogger(
  log: Logger,
  config: Config,
  env: Readonly<Record<string, string | undefined>>,
): void {
  const level = logLevel(config, env)
  const made = outputs.get(log)
  if (made) {
    const target = logTarget(config, made.service)
    checkLogFile(config, target)
    made.output.apply(target)
  }
  if (log.level !== level) log.level = level
  if (made) warnIfNotJournal(log, config, env)
}

function warnIfNotJournal(
  log: Logger,
  config: Config,
  env: Readonly<Record<string, string | undefined>>,
): void {
  if (config.DEFAULT.use_journal && !stdoutIsJournal(env))
    log.warn(
      'use_journal = true but standard output is not the journal (JOURNAL_STREAM does not name it): lines carry <N> priority prefixes all the same',
    )
}
