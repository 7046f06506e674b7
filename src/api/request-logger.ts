/**
 * Per-request loggers, made only when a request logs.
 *
 * Fastify gives every request a child logger bound to its `request_id`. Making a pino child
 * serialises the bindings through the redaction rules: about a microsecond, a noticeable share of a
 * cached read, paid by every request although request logging is off and only failures log. So the
 * request gets a stand-in that makes the real child on first use and then forwards to it:
 * log lines, levels and bindings are exactly those of `logger.child(bindings)`.
 */
import type { FastifyServerOptions } from 'fastify'
import type { Bindings, Logger } from 'pino'

type LevelName = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'

class DeferredLogger {
  // Private fields: stored on the instance without a [[Set]] through the prototype chain,
  // which ends in the forwarding proxy below.
  #parent: Logger
  #bindings: Bindings
  #child: Logger | undefined = undefined

  constructor(parent: Logger, bindings: Bindings) {
    this.#parent = parent
    this.#bindings = bindings
  }

  /** The real child, made on first need. */
  static childOf(d: DeferredLogger): Logger {
    return (d.#child ??= d.#parent.child(d.#bindings))
  }

  #log(level: LevelName, args: unknown[]): void {
    // A disabled level is a no-op on the child too (it has its parent's level): skip making it.
    if (this.#child === undefined && !this.#parent.isLevelEnabled(level)) return
    const child = DeferredLogger.childOf(this)
    const log = child[level] as (...a: unknown[]) => void
    log.apply(child, args)
  }

  fatal(...args: unknown[]): void {
    this.#log('fatal', args)
  }
  error(...args: unknown[]): void {
    this.#log('error', args)
  }
  warn(...args: unknown[]): void {
    this.#log('warn', args)
  }
  info(...args: unknown[]): void {
    this.#log('info', args)
  }
  debug(...args: unknown[]): void {
    this.#log('debug', args)
  }
  trace(...args: unknown[]): void {
    this.#log('trace', args)
  }
  child(...args: Parameters<Logger['child']>): unknown {
    return DeferredLogger.childOf(this).child(...args)
  }
}

/**
 * Reading or writing anything else (`level`, `bindings()`, custom levels, pino's internal symbols)
 * makes the child too and goes to it: this proxy ends the stand-ins' prototype chain.
 */
Object.setPrototypeOf(
  DeferredLogger.prototype,
  new Proxy(Object.create(null) as object, {
    get: (_target, key, receiver: DeferredLogger) =>
      Reflect.get(DeferredLogger.childOf(receiver), key),
    set: (_target, key, value, receiver: DeferredLogger) =>
      Reflect.set(DeferredLogger.childOf(receiver), key, value),
  }),
)

/**
 * Fastify's `childLoggerFactory`. With child options (a route's `logLevel` or `logSerializers`)
 * the child is made at once, as Fastify would.
 */
export const deferredChildLogger: NonNullable<FastifyServerOptions['childLoggerFactory']> =
  function (logger, bindings, opts) {
    if (Object.keys(opts).length > 0) return logger.child(bindings, opts)
    // Fastify hands over its pino child of the process logger (src/main/logger.ts).
    return new DeferredLogger(logger as Logger, bindings) as unknown as Logger
  }
