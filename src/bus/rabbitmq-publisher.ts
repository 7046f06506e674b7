/**
 * The sending side of the RabbitMQ bus: calls, casts and publishes from the moment they are asked
 * for until they are settled. Each waits for a connection (within its timeout), is published with
 * publisher confirms, and settles on its reply (call) or the broker's confirm (cast, publish).
 * What was in flight on a lost connection fails with UnavailableError; what waited is sent on the
 * next connection.
 */
import { randomUUID } from 'node:crypto'
import type {
  Channel,
  ChannelModel,
  ConfirmChannel,
  ConsumeMessage,
  Message,
  Options,
} from 'amqplib'
import type { CallOptions } from './bus.js'
import { unwrapReply, type ReplyEnvelope } from './envelope.js'
import { AppError, TimeoutError, UnavailableError } from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'
import { type Link } from './rabbitmq-connection.js'
import { errorMessage } from '../domain/error-message.js'
import { JSON_TYPE } from './rabbitmq-consumers.js'
import { isQueueTypeMismatch, topicQueueOptions } from './rabbitmq-queues.js'

/** The pseudo-queue of direct reply-to: replies go straight to the calling channel. */
const REPLY_TO = 'amq.rabbitmq.reply-to'

/** What the publisher keeps per connection. */
export interface Session {
  /** Publishes everything (with confirms) and consumes the replies. */
  channel: ConfirmChannel
  /** Declares topic queues; a refused declaration closes only this channel. */
  declarer: Promise<Channel> | undefined
  /** Topic queues declared on this connection. */
  declared: Map<string, Promise<void>>
}

export type OutgoingKind = 'call' | 'cast' | 'publish'

interface Outgoing {
  kind: OutgoingKind
  id: string
  topic: string
  method: string
  body: Buffer
  deadline: number
  /** The link it is being sent on or was sent on. */
  link: Link<Session> | undefined
  /** Counts publishes, so that a stale confirm (after a returned message) is ignored. */
  attempt: number
  done: boolean
  fail(err: AppError): void
  succeed(envelope: ReplyEnvelope | undefined): void
}

export interface PublisherOptions {
  log: Logger
  /** The exchange of publish (direct, routing key = topic). */
  exchange: string
  defaultTimeoutMs: number
  /** Topic queues are quorum queues (`[oslo_messaging_rabbit] rabbit_quorum_queue`). */
  quorumQueues: boolean
  /** The live link right now, if any. */
  current(): Link<Session> | undefined
}

export class Publisher {
  readonly #o: PublisherOptions
  /** Not sent yet (no connection, or declaring its queue). */
  readonly #waiting = new Set<Outgoing>()
  /** Published, waiting for the reply or the confirm; by message id (= correlation id). */
  readonly #sent = new Map<string, Outgoing>()

  constructor(options: PublisherOptions) {
    this.#o = options
  }

  /** Builds the session on a new connection: the publishing channel, the exchange, the reply consumer. */
  async open(model: ChannelModel, kill: (reason: Error) => void): Promise<Session> {
    const { log, exchange } = this.#o
    const channel = await model.createConfirmChannel()
    channel.on('error', (err: Error) =>
      log.warn({ err: err.message }, 'RabbitMQ closed the publishing channel'),
    )
    // Replies and confirms arrive on this channel: without it the connection is useless.
    // (A turn later: when the whole connection closes, amqplib closes the channels first.)
    channel.on('close', () => setImmediate(() => kill(new Error('the publishing channel closed'))))
    channel.on('return', (msg: Message) => this.#returned(msg))
    await channel.assertExchange(exchange, 'direct', { durable: true })
    await channel.consume(REPLY_TO, (msg) => msg && this.#replied(msg), { noAck: true })
    return { channel, declarer: undefined, declared: new Map() }
  }

  /** A connection is up: send what waited. */
  up(): void {
    for (const out of [...this.#waiting]) void this.#send(out)
  }

  /** The connection of `link` is gone: what was in flight on it fails; what waited stays. */
  lost(link: Link<Session>, err: Error): void {
    const lostErr = new UnavailableError(
      `lost the connection to RabbitMQ (${link.broker}) before the reply`,
      {
        code: 'BUS_CONNECTION_LOST',
        cause: err,
      },
    )
    for (const out of [...this.#sent.values()]) if (out.link === link) out.fail(lostErr)
    for (const out of this.#waiting) if (out.link === link) out.link = undefined
  }

  /** Fails everything not settled yet. */
  failAll(err: AppError): void {
    for (const out of [...this.#waiting, ...this.#sent.values()]) out.fail(err)
  }

  /** Sends `body` and settles on the reply (call) or the broker's confirm (cast, publish). */
  dispatch(
    kind: OutgoingKind,
    topic: string,
    method: string,
    body: Buffer,
    { timeoutMs = this.#o.defaultTimeoutMs, signal }: CallOptions = {},
  ): Promise<unknown> {
    if (signal?.aborted) return Promise.reject(aborted(topic, method, signal))
    return new Promise((resolve, reject) => {
      const finish = () => {
        out.done = true
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        this.#waiting.delete(out)
        this.#sent.delete(out.id)
      }
      const out: Outgoing = {
        kind,
        id: randomUUID(),
        topic,
        method,
        body,
        deadline: Date.now() + timeoutMs,
        link: undefined,
        attempt: 0,
        done: false,
        fail(err) {
          if (out.done) return
          finish()
          reject(err)
        },
        succeed(envelope) {
          if (out.done) return
          finish()
          try {
            resolve(envelope === undefined ? undefined : unwrapReply(envelope))
          } catch (err) {
            reject(err as Error)
          }
        },
      }
      const onAbort = () => out.fail(aborted(topic, method, signal))
      const what =
        kind === 'call'
          ? `no reply to ${topic}.${method}`
          : `RabbitMQ did not accept ${topic}.${method}`
      const timer = setTimeout(
        () => out.fail(new TimeoutError(`${what} within ${timeoutMs} ms`)),
        timeoutMs,
      )
      signal?.addEventListener('abort', onAbort, { once: true })
      this.#waiting.add(out)
      void this.#send(out)
    })
  }

  /** Declares the topic queue once per connection, so that a call to a topic nobody serves yet waits in it. */
  #declare(link: Link<Session>, topic: string): Promise<void> {
    const session = link.state
    const known = session.declared.get(topic)
    if (known) return known
    session.declarer ??= link.model.createChannel().then((ch) => {
      ch.on('error', (err: Error) =>
        this.#o.log.warn({ err: err.message }, 'RabbitMQ refused a queue declaration'),
      )
      ch.on('close', () => {
        session.declarer = undefined
      })
      return ch
    })
    const { quorumQueues, log } = this.#o
    const declaring = session.declarer.then(async (ch) => {
      try {
        await ch.assertQueue(topic, topicQueueOptions(quorumQueues))
      } catch (err) {
        if (!isQueueTypeMismatch(err) || !link.alive) throw err
        // The queue exists with the other type (its servers say why they refuse it). The caller
        // only needs it to exist, so that the call waits in it: check that, on a fresh channel
        // (the refusal closed the declarer).
        const check = await link.model.createChannel()
        check.on('error', () => {}) // reported through checkQueue's rejection
        try {
          await check.checkQueue(topic)
        } finally {
          await check.close().catch(() => {})
        }
        log.warn(
          { topic, quorumQueues },
          `the queue ${topic} exists as a ${quorumQueues ? 'classic' : 'quorum'} queue; sending to it as it is`,
        )
      }
    })
    session.declared.set(topic, declaring)
    declaring.catch(() => {
      if (session.declared.get(topic) === declaring) session.declared.delete(topic)
    })
    return declaring
  }

  /** Sends `out` on the current connection; without one it stays waiting until up(). */
  async #send(out: Outgoing): Promise<void> {
    const link = this.#o.current()
    if (!link || out.done || out.link === link) return
    out.link = link
    if (out.kind !== 'publish') {
      try {
        await this.#declare(link, out.topic)
      } catch (err) {
        if (out.link !== link) return
        out.link = undefined
        if (link.alive && !out.done) {
          out.fail(
            new UnavailableError(`cannot declare the queue ${out.topic}: ${errorMessage(err)}`, {
              code: 'BUS_DECLARE_FAILED',
              cause: err,
            }),
          )
        }
        return
      }
    }
    if (out.done || out.link !== link) return
    if (!link.alive) {
      out.link = undefined // up() sends it again
      return
    }
    this.#waiting.delete(out)
    this.#sent.set(out.id, out)
    const attempt = ++out.attempt
    const props: Options.Publish = {
      contentType: JSON_TYPE,
      messageId: out.id,
      mandatory: out.kind !== 'publish',
    }
    if (out.kind === 'call') {
      props.correlationId = out.id
      props.replyTo = REPLY_TO
      // A request nobody took before its caller gave up is dropped by the broker, not served late.
      props.expiration = String(Math.max(1, out.deadline - Date.now()))
    }
    const exchange = out.kind === 'publish' ? this.#o.exchange : ''
    try {
      link.state.channel.publish(exchange, out.topic, out.body, props, (err: unknown) => {
        if (out.attempt !== attempt || out.link !== link) return
        if (err) {
          if (link.alive)
            out.fail(
              // A nack: not queued (a cluster node stopping, a queue without a leader); retryable.
              new UnavailableError(
                `RabbitMQ refused ${out.topic}.${out.method} (nack): not queued; it may be sent again`,
                { code: 'BUS_REFUSED' },
              ),
            )
        } else if (out.kind !== 'call') out.succeed(undefined)
      })
    } catch {
      // The channel is closing: lost() fails what was sent on it.
    }
  }

  /** A mandatory message came back unroutable: its queue was deleted meanwhile. Declare it again and resend. */
  #returned(msg: Message): void {
    const out = this.#sent.get(String(msg.properties.messageId))
    if (!out || out.done) return
    out.link?.state.declared.delete(out.topic)
    this.#sent.delete(out.id)
    out.link = undefined
    out.attempt += 1
    this.#waiting.add(out)
    void this.#send(out)
  }

  #replied(msg: ConsumeMessage): void {
    const out = this.#sent.get(String(msg.properties.correlationId))
    if (!out || out.kind !== 'call') return // a late reply: its caller gave up
    let envelope: ReplyEnvelope
    try {
      envelope = JSON.parse(msg.content.toString('utf8')) as ReplyEnvelope
      if (typeof envelope?.ok !== 'boolean') throw new Error('not a reply envelope')
    } catch (err) {
      out.fail(
        new AppError(`unreadable reply to ${out.topic}.${out.method}`, {
          code: 'BUS_DECODING',
          cause: err,
        }),
      )
      return
    }
    out.succeed(envelope)
  }
}

function aborted(topic: string, method: string, signal: AbortSignal | undefined): AppError {
  return new AppError(`call ${topic}.${method} was aborted`, {
    code: 'ABORTED',
    cause: signal?.reason,
  })
}
