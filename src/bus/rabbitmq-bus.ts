/**
 * RabbitMqBus: the MessageBus over RabbitMQ (AMQP 0-9-1, amqplib), with the in-process bus's
 * semantics. Calls and casts go to a durable queue named after the topic (competing consumers);
 * replies come back through direct reply-to; publish/subscribe use one direct exchange with the
 * topic as routing key and an exclusive queue per subscriber. The wire format, timeouts and
 * reconnection rules are in docs/bus.md.
 *
 * Three parts: rabbitmq-connection.ts keeps one connection up, rabbitmq-publisher.ts sends and
 * settles, rabbitmq-consumers.ts serves and subscribes.
 */
import type { MessageBus } from './bus.js'
import { InvalidInputError, UnavailableError } from '../domain/errors.js'
import { noopLogger, type Logger } from '../domain/logger.js'
import { ReconnectingConnection } from './rabbitmq-connection.js'
import { errorMessage } from '../domain/error-message.js'
import {
  Consumer,
  replyChannels,
  type ConsumerContext,
  type ConsumerKind,
} from './rabbitmq-consumers.js'
import { Publisher, type Session } from './rabbitmq-publisher.js'
import { parseTransportUrl } from './transport-url.js'

/** Options of {@link createRabbitMqBus}. */
export interface RabbitMqBusOptions {
  /** oslo.messaging's `rabbit://user:pass@host:port/vhost`; several `host:port`s comma-separated are tried in order. */
  url: string
  /** @default a logger that discards everything */
  log?: Logger
  /** Timeout of calls without their own, and how long cast/publish wait for a connection. @default 30000 */
  defaultTimeoutMs?: number
  /** Told each time the connection is back after a loss (metrics: cyborg_bus_reconnects_total). */
  onReconnect?: () => void
  /**
   * The exchange of publish/subscribe (not `cyborg`, which oslo.messaging notification listeners
   * declare as a topic exchange: docs/bus.md). @default 'cyborg_bus'
   */
  exchange?: string
  /** Backoff between connection attempts, doubling from initialDelayMs (docs/bus.md). @default { initialDelayMs: 250, maxDelayMs: 2000 } */
  reconnect?: { initialDelayMs?: number; maxDelayMs?: number }
  /**
   * Declare the topic queues as quorum queues (`x-queue-type: quorum`), replicated over a
   * RabbitMQ cluster: `[oslo_messaging_rabbit] rabbit_quorum_queue`. @default false
   */
  quorumQueues?: boolean
  /** Requests one server works on at once (AMQP prefetch). @default 64 */
  prefetch?: number
  /** How long close() lets running handlers finish their reply. @default 5000 */
  drainTimeoutMs?: number
  /** @default 30 */
  heartbeatSeconds?: number
  /** Shown by `rabbitmqctl list_connections client_properties`. @default 'cyborg' */
  connectionName?: string
  /** Stops the first connection attempts (they retry until a broker answers). */
  signal?: AbortSignal
}

/** JSON, as the in-process bus round-trips it; `what` names the value in the error. */
function encode(what: string, value: unknown): Buffer {
  try {
    return Buffer.from(JSON.stringify(value) ?? 'null')
  } catch (cause) {
    throw new InvalidInputError(`${what} is not JSON-serialisable`, {
      code: 'BUS_ENCODING',
      cause,
    })
  }
}

/** Waits for the handlers still running, at most `timeoutMs`. */
async function drain(running: ReadonlySet<Promise<void>>, timeoutMs: number) {
  if (running.size === 0) return
  let timer: NodeJS.Timeout | undefined
  const drained = Promise.allSettled([...running])
  await Promise.race([drained, new Promise((r) => (timer = setTimeout(r, timeoutMs)))])
  clearTimeout(timer)
}

/**
 * Connects to RabbitMQ and returns the bus. An unreachable broker is retried with backoff (and
 * logged) until it answers or `options.signal` aborts (UnavailableError, code BUS_CONNECT_ABORTED).
 * @throws InvalidInputError (code TRANSPORT_URL_INVALID) for a malformed URL, at once
 */
export async function createRabbitMqBus(options: RabbitMqBusOptions): Promise<MessageBus> {
  const brokers = parseTransportUrl(options.url)
  const {
    log = noopLogger,
    defaultTimeoutMs = 30_000,
    exchange = 'cyborg_bus',
    reconnect: { initialDelayMs = 250, maxDelayMs = 2000 } = {},
    prefetch = 64,
    drainTimeoutMs = 5000,
    quorumQueues = false,
  } = options
  const consumers = new Set<Consumer>()
  const running = new Set<Promise<void>>()
  let closed = false
  let closing: Promise<void> | undefined
  /** When and why the last connection was lost (for status()). */
  let lastLoss: { at: number; reason: string } | undefined

  const shared = { log, exchange, quorumQueues, current: () => conn.current }
  const publisher = new Publisher({ ...shared, defaultTimeoutMs })
  const conn: ReconnectingConnection<Session> = new ReconnectingConnection<Session>({
    brokers,
    log,
    initialDelayMs,
    maxDelayMs,
    heartbeatSeconds: options.heartbeatSeconds,
    connectionName: options.connectionName,
    open: (model, kill) => publisher.open(model, kill),
    up(link) {
      if (lastLoss !== undefined) options.onReconnect?.()
      publisher.up()
      for (const consumer of consumers) consumer.up(link)
    },
    lost(link, err) {
      lastLoss = { at: Date.now(), reason: err.message }
      publisher.lost(link, err)
      for (const consumer of consumers) consumer.lost()
    },
  })

  const ctx: ConsumerContext = {
    ...shared,
    prefetch,
    replyChannel: replyChannels(log),
    retryDelayMs: (attempt) => Math.min(maxDelayMs, initialDelayMs * 2 ** attempt),
    track(work) {
      running.add(work)
      void work.finally(() => running.delete(work))
    },
  }

  const assertOpen = () => {
    if (closed) throw new UnavailableError('the bus is closed', { code: 'BUS_CLOSED' })
  }

  const addConsumer = async (topic: string, spec: ConsumerKind) => {
    assertOpen()
    const consumer = new Consumer(topic, spec, ctx)
    consumers.add(consumer)
    const link = conn.current
    if (link) {
      try {
        await consumer.attach(link)
      } catch (err) {
        // A lost connection is not the caller's problem: up() attaches it on the next one.
        if (link.alive) {
          consumers.delete(consumer)
          await consumer.stop()
          throw new UnavailableError(`cannot consume ${topic}: ${errorMessage(err)}`, {
            code: 'BUS_DECLARE_FAILED',
            cause: err,
          })
        }
      }
    }
    return {
      async unsubscribe() {
        consumers.delete(consumer)
        await consumer.stop()
      },
    }
  }

  try {
    await conn.start(options.signal)
  } catch (err) {
    await conn.close()
    throw err
  }

  return {
    async call(topic, method, payload, callOptions) {
      assertOpen()
      const body = encode(`payload of ${topic}.${method}`, { method, payload })
      return publisher.dispatch('call', topic, method, body, callOptions)
    },

    async cast(topic, method, payload) {
      assertOpen()
      await publisher.dispatch(
        'cast',
        topic,
        method,
        encode(`payload of ${topic}.${method}`, { method, payload }),
      )
    },

    serve: (topic, handler) => addConsumer(topic, { kind: 'server', handler }),

    async publish(topic, msg) {
      assertOpen()
      await publisher.dispatch('publish', topic, 'publish', encode(`message on ${topic}`, msg))
    },

    subscribe: (topic, handler) => addConsumer(topic, { kind: 'subscriber', handler }),

    status() {
      if (closed) return { state: 'closed', detail: 'closed' }
      const link = conn.current
      if (link) return { state: 'up', detail: `connected to ${link.broker}` }
      if (!lastLoss) return { state: 'connecting', detail: 'connecting' }
      const ago = Math.round((Date.now() - lastLoss.at) / 1000)
      return {
        state: 'connecting',
        detail: `connection lost ${ago} s ago (${lastLoss.reason}); reconnecting`,
      }
    },

    close() {
      closing ??= (async () => {
        closed = true
        await Promise.all([...consumers].map((c) => c.stop()))
        consumers.clear()
        await drain(running, drainTimeoutMs)
        await conn.close()
        // Last, so that replies arriving while the handlers drain still reach their callers.
        publisher.failAll(
          new UnavailableError('the bus was closed before a reply arrived', { code: 'BUS_CLOSED' }),
        )
      })()
      return closing
    },
  }
}
