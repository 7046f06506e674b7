/**
 * One AMQP connection that keeps itself up: it connects to the first broker of the transport URL
 * that answers (in order), and when the connection is lost it reconnects with exponential backoff
 * and jitter, trying the brokers from the one after the lost one (round-robin, as oslo.messaging's
 * default failover does), so that a dead cluster node is tried last. The owner (rabbitmq-bus.ts) builds its per-connection state in `open` and re-declares
 * its consumers in `up`; this file knows nothing of calls or topics.
 */
import type { ChannelModel } from 'amqplib'
import type { Logger } from '../domain/logger.js'
import { UnavailableError } from '../domain/errors.js'
import { describeBroker, type BrokerAddress } from './transport-url.js'
import { errorMessage } from '../domain/error-message.js'

/** A live connection and what the owner built on it. */
export interface Link<S> {
  readonly model: ChannelModel
  /** `rabbit://user:***@host:5672/`, for logs. */
  readonly broker: string
  readonly state: S
  /** False from the moment the connection (or a channel the owner declared vital) closed. */
  alive: boolean
}

export interface ReconnectingConnectionOptions<S> {
  brokers: readonly BrokerAddress[]
  log: Logger
  /** @default 250 */
  initialDelayMs?: number
  /** Longest pause between attempts: a broker that is back is found within about this long. @default 2000 */
  maxDelayMs?: number
  /** AMQP heartbeat: a silent peer is declared dead after about twice this. @default 30 */
  heartbeatSeconds?: number
  /** Gives up on a TCP + AMQP handshake after this long and tries the next broker. @default 5000 */
  connectTimeoutMs?: number
  /** Shown by `rabbitmqctl list_connections client_properties`. @default 'cyborg' */
  connectionName?: string
  /** Builds the owner's state on a new connection. A throw closes that connection and retries. */
  open(model: ChannelModel, kill: (reason: Error) => void): Promise<S>
  /** The connection is usable: re-declare consumers, send what waited. */
  up(link: Link<S>): void
  /** The connection is gone (never called after close()). */
  lost(link: Link<S>, err: Error): void
}

export class ReconnectingConnection<S> {
  readonly #o: ReconnectingConnectionOptions<S>
  #link: Link<S> | undefined
  #closed = false
  #closing: Promise<void> | undefined
  #running: Promise<void> | undefined
  #sleep: { timer: NodeJS.Timeout; wake: () => void } | undefined
  #firstDone = false
  /** Where the next round of attempts starts in the broker list: after the broker last lost. */
  #startAt = 0
  readonly #first: { promise: Promise<void>; resolve: () => void; reject: (err: Error) => void }

  constructor(options: ReconnectingConnectionOptions<S>) {
    this.#o = options
    let resolve!: () => void
    let reject!: (err: Error) => void
    const promise = new Promise<void>((res, rej) => {
      resolve = res
      reject = rej
    })
    promise.catch(() => {})
    this.#first = { promise, resolve, reject }
  }

  /** The live link, if connected right now. */
  get current(): Link<S> | undefined {
    return this.#link?.alive ? this.#link : undefined
  }

  /**
   * Connects, retrying with backoff until a broker answers. Resolves at the first connection;
   * rejects with UnavailableError when `signal` aborts or close() is called first.
   */
  start(signal?: AbortSignal): Promise<void> {
    const onAbort = () => {
      if (this.#firstDone) return
      // Nobody waits for this bus any more: stop trying (the owner still calls close()).
      this.#closed = true
      this.#first.reject(
        new UnavailableError('gave up connecting to RabbitMQ: interrupted', {
          code: 'BUS_CONNECT_ABORTED',
          cause: signal?.reason,
        }),
      )
      this.#wake()
    }
    if (signal?.aborted) onAbort()
    signal?.addEventListener('abort', onAbort, { once: true })
    this.#reconnect()
    return this.#first.promise.finally(() => signal?.removeEventListener('abort', onAbort))
  }

  /** Closes the connection; no reconnection after this. Idempotent. */
  async close(): Promise<void> {
    if (this.#closing) return this.#closing
    this.#closing = this.#close()
    return this.#closing
  }

  async #close(): Promise<void> {
    this.#closed = true
    this.#first.reject(
      new UnavailableError('the bus was closed before it connected', { code: 'BUS_CLOSED' }),
    )
    this.#wake()
    const link = this.#link
    this.#link = undefined
    if (link) {
      link.alive = false
      await link.model.close().catch(() => {})
    }
    await this.#running
  }

  #reconnect(): void {
    if (this.#closed || this.#running) return
    this.#running = this.#loop().finally(() => {
      this.#running = undefined
    })
  }

  async #loop(): Promise<void> {
    const { brokers, log, initialDelayMs = 250, maxDelayMs = 2000 } = this.#o
    for (let attempt = 0; !this.#closed; attempt++) {
      const failures: string[] = []
      const start = this.#startAt
      for (let i = 0; i < brokers.length; i++) {
        if (this.#closed) return
        const index = (start + i) % brokers.length
        const broker = brokers[index]!
        try {
          if (await this.#open(broker, index)) return
        } catch (err) {
          failures.push(`${describeBroker(broker)}: ${errorMessage(err)}`)
        }
      }
      if (this.#closed) return
      const base = Math.min(maxDelayMs, initialDelayMs * 2 ** attempt)
      const delay = Math.round(base * (0.8 + Math.random() * 0.2))
      log.warn(
        { retryInMs: delay, attempt: attempt + 1, failures },
        `cannot connect to RabbitMQ (${failures.join('; ')}); retrying in ${delay} ms`,
      )
      if (!this.#closed) await this.#pause(delay)
    }
  }

  /** Opens one connection and the owner's state on it; false when it died while opening. */
  async #open(broker: BrokerAddress, index: number): Promise<boolean> {
    const {
      heartbeatSeconds = 30,
      connectTimeoutMs = 5000,
      connectionName = 'cyborg',
      log,
    } = this.#o
    const shown = describeBroker(broker)
    // amqplib loads with the first connection: `cyborg up` (the in-process bus) never loads it.
    // Its default export: the bundle (docs/build.md) gives a CommonJS package no named ones.
    const { default: amqplib } = await import('amqplib')
    const model = await amqplib.connect(
      {
        protocol: 'amqp',
        hostname: broker.hostname,
        port: broker.port,
        ...(broker.username === undefined
          ? {}
          : { username: broker.username, password: broker.password ?? '' }),
        // amqplib percent-decodes the vhost it is given.
        vhost: encodeURIComponent(broker.vhost),
        heartbeat: heartbeatSeconds,
      },
      // Without noDelay, Nagle plus delayed ACKs cost 40 ms per RPC (docs/bus.md).
      {
        noDelay: true,
        timeout: connectTimeoutMs,
        clientProperties: { connection_name: connectionName },
      },
    )
    let lastError: Error | undefined
    // Set once the owner's state is built; the listeners below see it through this box.
    const box: { link?: Link<S> } = {}
    let dead = false
    const kill = (reason: Error) => {
      if (dead) return
      lastError ??= reason
      if (box.link) box.link.alive = false
      model.close().catch(() => {})
    }
    model.on('error', (err: Error) => {
      lastError = err
    })
    model.on('blocked', (reason: string) =>
      log.warn({ reason }, 'RabbitMQ blocked this connection (resource alarm)'),
    )
    model.on('unblocked', () => log.info('RabbitMQ unblocked this connection'))
    model.once('close', (err?: Error) => {
      dead = true
      const link = box.link
      if (link) link.alive = false
      if (!link || this.#link !== link || this.#closed) return
      this.#link = undefined
      this.#startAt = (index + 1) % this.#o.brokers.length
      const reason = err ?? lastError ?? new Error('connection closed')
      log.warn(
        { broker: shown, err: reason.message },
        'lost the connection to RabbitMQ; reconnecting',
      )
      this.#o.lost(link, reason)
      this.#reconnect()
    })
    let state: S
    try {
      state = await this.#o.open(model, kill)
    } catch (err) {
      await model.close().catch(() => {})
      throw err
    }
    if (dead || this.#closed) {
      await model.close().catch(() => {})
      return this.#closed
    }
    const link: Link<S> = { model, broker: shown, state, alive: true }
    box.link = link
    this.#link = link
    log.info({ broker: shown }, `connected to RabbitMQ at ${shown}`)
    this.#firstDone = true
    this.#first.resolve()
    this.#o.up(link)
    return true
  }

  #pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer)
        this.#sleep = undefined
        resolve()
      }
      const timer = setTimeout(wake, ms)
      this.#sleep = { timer, wake }
    })
  }

  #wake(): void {
    this.#sleep?.wake()
  }
}
