/**
 * The logger port: the subset of pino's `Logger` that the services use, so that nothing below
 * `main` depends on pino. A pino logger is assignable to it as is.
 */

/** A log call: `log.info({ host }, 'reported')` or `log.info('reported %s', host)`. */
export interface LogFn {
  (obj: object, msg?: string, ...args: unknown[]): void
  (msg: string, ...args: unknown[]): void
}

export interface Logger {
  /** Something went wrong and a person should look. */
  error: LogFn
  /** Something unexpected that the service survived (a retry, a skipped report). */
  warn: LogFn
  /** A state change worth keeping (a report changed the inventory, a service started). */
  info: LogFn
  /** Detail for debugging (every write, every tick). */
  debug: LogFn
  /** A logger whose every line carries `bindings`, e.g. `{ component: 'agent', host }`. */
  child(bindings: Record<string, unknown>): Logger
}

const noop = () => {}

/** Discards everything; for tests and for callers that do not care. */
export const noopLogger: Logger = {
  error: noop,
  warn: noop,
  info: noop,
  debug: noop,
  child: () => noopLogger,
}
