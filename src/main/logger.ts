/**
 * The process logger: pino, one JSON line per event on stdout. The level comes from
 * `CYBORG_LOG_LEVEL` when set, else `[DEFAULT] debug` (true → debug, false → info).
 */
import { pino, type DestinationStream, type Logger } from 'pino'
import { ConfigError } from '../domain/errors.js'
import type { Config } from '../config/config.js'

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
  /** @default stdout */
  destination?: DestinationStream
}

export function createLogger(config: Config, options: LoggerOptions): Logger {
  return pino(
    {
      level: logLevel(config, options.env),
      base: { service: options.service, hostname: config.DEFAULT.host, pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT, censor: '***' },
    },
    options.destination ?? pino.destination({ dest: 1, sync: true }),
  )
}
