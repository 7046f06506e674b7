/**
 * RabbitMqNotifier: the Notifier over RabbitMQ, putting on the broker what oslo.messaging's
 * `messagingv2` driver puts there (oslo_messaging/_drivers/impl_rabbit.py `notify_send` and
 * `_publish_and_creates_default_queue`), so that an oslo notification listener reads it as it
 * reads Nova's:
 * - the control exchange (`cyborg`), type topic, non-durable, not auto-delete
 *   (amqp_durable_queues and amqp_auto_delete are false by default);
 * - for each topic and priority, a queue named like its routing key (`notifications.info`), with
 *   the same properties, bound with that key: a notification waits there for a listener that
 *   starts later, as oslo's do;
 * - each message JSON in envelope 2.0 (notifier.ts), persistent (kombu's default delivery mode).
 *
 * Unlike oslo it publishes with confirms and `mandatory`: notify() resolves only once the broker
 * accepted every message, and a message nobody could route (its queue deleted meanwhile) fails the
 * call instead of vanishing. Messages go out in order, one notify() after the other. A notify()
 * whose connection is lost is sent again, whole, on the next connection (within `timeoutMs`), so a
 * receiver may see some of its messages twice, with the same message_id.
 */
import type { Channel, ChannelModel, ConfirmChannel } from 'amqplib'
import { TimeoutError, UnavailableError, type AppError } from '../domain/errors.js'
import { errorMessage } from '../domain/error-message.js'
import { noopLogger, type Logger } from '../domain/logger.js'
import {
  encodeNotification,
  notificationRoutingKey,
  type NotificationMessage,
  type Notifier,
} from './notifier.js'
import { ReconnectingConnection, type Link } from './rabbitmq-connection.js'
import { parseTransportUrl } from './transport-url.js'

/** Options of {@link createRabbitMqNotifier}. */
export interface RabbitMqNotifierOptions {
  /** `rabbit://user:pass@host:port/vhost`; several `host:port`s comma-separated are tried in order. */
  url: string
  /** `[oslo_messaging_notifications] topics`: every message goes to each. @default ['notifications'] */
  topics?: readonly string[]
  /** oslo's control exchange. @default 'cyborg' */
  exchange?: string
  /** @default a logger that discards everything */
  log?: Logger
  /** How long one notify() waits for a connection and the broker's confirms. @default 30000 */
  timeoutMs?: number
  /** Backoff between connection attempts (docs/bus.md). @default { initialDelayMs: 250, maxDelayMs: 2000 } */
  reconnect?: { initialDelayMs?: number; maxDelayMs?: number }
  /** @default 30 */
  heartbeatSeconds?: number
  /** Shown by `rabbitmqctl list_connections client_properties`. @default 'cyborg-notifier' */
  connectionName?: string
}

/** oslo's defaults: amqp_durable_queues = false, amqp_auto_delete = false, no queue arguments. */
const EXCHANGE = { durable: false, autoDelete: false } as const
const QUEUE = { durable: false, autoDelete: false, exclusive: false } as const

interface Session {
  channel: ConfirmChannel
  exchange: Promise<void> | undefined
  /** Routing keys whose queue is declared and bound on this connection. */
  queues: Map<string, Promise<void>>
}

/** The notify() being sent (one at a time). */
interface Batch {
  /** The connection it is being sent on. */
  link: Link<Session> | undefined
  /** Ends it with `err`. */
  fail(err: AppError): void
  /** `link` is gone: send the whole batch again on the next connection, within the timeout. */
  resend(link: Link<Session>, cause: unknown): void
}

/** What the declarations and publications of a notifier need. */
interface Wire {
  log: Logger
  /** oslo's control exchange. */
  exchange: string
}

/**
 * The session of a new connection: its confirm channel, on which a returned (unroutable) message
 * fails the batch being sent on it.
 */
async function openSession(
  model: ChannelModel,
  kill: (reason: Error) => void,
  log: Logger,
  sending: () => Batch | undefined,
): Promise<Session> {
  const channel = await model.createConfirmChannel()
  channel.on('error', (err: Error) =>
    log.warn({ err: err.message }, 'RabbitMQ closed the notification channel'),
  )
  // Confirms arrive on this channel: without it the connection is useless. (A turn later: when
  // the whole connection closes, amqplib closes the channels first.)
  channel.on('close', () => setImmediate(() => kill(new Error('the notification channel closed'))))
  const session: Session = { channel, exchange: undefined, queues: new Map() }
  channel.on('return', (msg: { fields: { routingKey: string } }) => {
    const key = msg.fields.routingKey
    session.queues.delete(key)
    const current = sending()
    if (current?.link?.state === session)
      current.fail(
        new UnavailableError(`RabbitMQ could not route a notification to the queue ${key}`, {
          code: 'BUS_UNROUTABLE',
        }),
      )
  })
  return session
}

/** Runs `fn` on a channel of its own: a refused declaration closes only that channel. */
async function onChannel<T>(link: Link<Session>, fn: (ch: Channel) => Promise<T>): Promise<T> {
  const ch = await link.model.createChannel()
  ch.on('error', () => {}) // reported through fn's rejection
  try {
    return await fn(ch)
  } finally {
    await ch.close().catch(() => {})
  }
}

/**
 * Declares as oslo does. A broker that has the entity with other properties (a deployment with
 * amqp_durable_queues = true or quorum queues) refuses that (406); the entity is then used as it
 * is, as long as it exists.
 */
async function declare(
  log: Logger,
  link: Link<Session>,
  what: string,
  assert: (ch: Channel) => Promise<unknown>,
  check: (ch: Channel) => Promise<unknown>,
): Promise<void> {
  try {
    await onChannel(link, assert)
  } catch (err) {
    if ((err as { code?: unknown }).code !== 406 || !link.alive) throw err
    await onChannel(link, check)
    // Fine when an oslo deployment declared it (listeners declare it the same way again); not
    // when something else did, e.g. a RabbitMqBus whose exchange has the same name: oslo
    // listeners are then refused (docs/notifications.md).
    log.warn(
      { err: errorMessage(err) },
      `the ${what} exists with other properties than oslo.messaging's defaults; using it as it is ` +
        '(oslo listeners that declare it otherwise will be refused by RabbitMQ)',
    )
  }
}

/** The exchange once per connection, then the queue and binding of `key` once per connection. */
function declared({ log, exchange }: Wire, link: Link<Session>, key: string): Promise<void> {
  const s = link.state
  const ex = (s.exchange ??= declare(
    log,
    link,
    `exchange ${exchange}`,
    (ch) => ch.assertExchange(exchange, 'topic', EXCHANGE),
    (ch) => ch.checkExchange(exchange),
  ))
  ex.catch(() => {
    if (s.exchange === ex) s.exchange = undefined
  })
  const known = s.queues.get(key)
  if (known) return known
  const queue = ex.then(async () => {
    await declare(
      log,
      link,
      `queue ${key}`,
      (ch) => ch.assertQueue(key, QUEUE),
      (ch) => ch.checkQueue(key),
    )
    await onChannel(link, (ch) => ch.bindQueue(key, exchange, key))
  })
  s.queues.set(key, queue)
  queue.catch(() => {
    if (s.queues.get(key) === queue) s.queues.delete(key)
  })
  return queue
}

/** Declares what `items` go to, publishes them, and waits for every confirm (unless `stale` first). */
async function publish(
  wire: Wire,
  link: Link<Session>,
  items: readonly { key: string; body: Buffer; id: string }[],
  stale: () => boolean,
): Promise<void> {
  try {
    await Promise.all([...new Set(items.map((i) => i.key))].map((k) => declared(wire, link, k)))
  } catch (err) {
    throw new UnavailableError(`cannot declare the notification queues: ${errorMessage(err)}`, {
      code: 'BUS_DECLARE_FAILED',
      cause: err,
    })
  }
  const { channel } = link.state
  const confirms: Promise<void>[] = []
  for (const item of items) {
    if (stale()) return
    let room = true
    const confirmed = new Promise<void>((res, rej) => {
      room = channel.publish(
        wire.exchange,
        item.key,
        item.body,
        {
          contentType: 'application/json',
          contentEncoding: 'utf-8',
          persistent: true,
          mandatory: true,
          messageId: item.id,
        },
        (err: unknown) => (err ? rej(err as Error) : res()),
      )
    })
    confirmed.catch(() => {}) // awaited below, unless the batch ends first
    confirms.push(confirmed)
    // Flow control: a big batch waits for the socket instead of filling memory.
    if (!room) await drained(channel)
  }
  await Promise.all(confirms)
}

/**
 * What ends a batch at once: a refusal on a live connection. Anything else means the connection
 * (or its channel) went away, and the batch is sent again on the next one.
 */
function finalError(err: unknown, link: Link<Session>): AppError | undefined {
  if (!link.alive) return undefined
  if (err instanceof UnavailableError && err.code === 'BUS_DECLARE_FAILED') return err
  if (errorMessage(err).includes('nacked'))
    return new UnavailableError('RabbitMQ refused a notification', {
      code: 'BUS_REFUSED',
      cause: err,
    })
  return undefined
}

/**
 * Returns the notifier at once and connects in the background, retrying with backoff (and
 * logging) until a broker answers; notify() waits for the connection within `timeoutMs`.
 * @throws InvalidInputError (code TRANSPORT_URL_INVALID) for a malformed URL, at once
 */
export function createRabbitMqNotifier(options: RabbitMqNotifierOptions): Notifier {
  const brokers = parseTransportUrl(options.url)
  const {
    topics = ['notifications'],
    exchange = 'cyborg',
    log = noopLogger,
    timeoutMs = 30_000,
    reconnect: { initialDelayMs = 250, maxDelayMs = 2000 } = {},
  } = options
  const waiting = new Set<() => void>()
  let current: Batch | undefined
  let closed = false
  let closing: Promise<void> | undefined
  let tail: Promise<unknown> = Promise.resolve()

  const conn = new ReconnectingConnection<Session>({
    brokers,
    log,
    initialDelayMs,
    maxDelayMs,
    heartbeatSeconds: options.heartbeatSeconds,
    connectionName: options.connectionName ?? 'cyborg-notifier',
    open: (model, kill) => openSession(model, kill, log, () => current),
    up() {
      for (const wake of [...waiting]) wake()
    },
    lost(link, err) {
      current?.resend(link, err)
    },
  })
  conn.start().catch(() => {}) // rejects only when closed before connecting

  /** Sends one batch: waits for a connection, declares, publishes, waits for every confirm. */
  function send(messages: readonly NotificationMessage[]): Promise<void> {
    const items = messages.flatMap((m) => {
      const body = encodeNotification(m)
      return topics.map((t) => ({
        key: notificationRoutingKey(t, m.priority),
        body,
        id: m.messageId,
      }))
    })
    if (closed)
      return Promise.reject(new UnavailableError('the notifier is closed', { code: 'BUS_CLOSED' }))
    if (items.length === 0) return Promise.resolve()
    return new Promise<void>((resolve, reject) => {
      let done = false
      let lastLoss: unknown
      const finish = (err?: AppError) => {
        if (done) return
        done = true
        clearTimeout(timer)
        waiting.delete(attempt)
        if (current === batch) current = undefined
        if (err) reject(err)
        else resolve()
      }
      const batch: Batch = {
        link: undefined,
        fail: finish,
        resend(link, cause) {
          if (done || batch.link !== link) return
          lastLoss = cause
          batch.link = undefined
          // Still the current link: its channel failed and the connection is being killed; wait
          // for the next one rather than spin on a dead channel.
          if (conn.current === link) waiting.add(attempt)
          else attempt()
        },
      }
      const timer = setTimeout(() => {
        const last = lastLoss === undefined ? '' : ` (last: ${errorMessage(lastLoss)})`
        finish(
          new TimeoutError(
            `RabbitMQ did not accept ${messages.length} notification(s) within ${timeoutMs} ms${last}`,
            { cause: lastLoss },
          ),
        )
      }, timeoutMs)
      const attempt = () => {
        waiting.delete(attempt)
        const link = conn.current
        if (!link) {
          waiting.add(attempt) // sent when the connection is up
          return
        }
        batch.link = link
        const stale = () => done || batch.link !== link
        publish({ log, exchange }, link, items, stale).then(
          () => {
            if (!stale()) finish()
          },
          (err: unknown) => {
            if (stale()) return
            const final = finalError(err, link)
            if (final) finish(final)
            else batch.resend(link, err)
          },
        )
      }
      current = batch
      attempt()
    })
  }

  return {
    notify(messages) {
      if (closed)
        return Promise.reject(
          new UnavailableError('the notifier is closed', { code: 'BUS_CLOSED' }),
        )
      const run = tail.then(() => send(messages))
      tail = run.catch(() => {})
      return run
    },
    close() {
      closing ??= (async () => {
        closed = true
        current?.fail(
          new UnavailableError('the notifier was closed before RabbitMQ confirmed', {
            code: 'BUS_CLOSED',
          }),
        )
        await conn.close()
      })()
      return closing
    },
  }
}

/** Resolves when the channel can take more (or closed), leaving no listener behind. */
function drained(channel: ConfirmChannel): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      channel.off('drain', done)
      channel.off('close', done)
      resolve()
    }
    channel.on('drain', done)
    channel.on('close', done)
  })
}
