/**
 * The consuming side of the RabbitMQ bus: RPC servers (a prefetch-limited consumer of the durable
 * topic queue, classic or quorum, acking once the reply is sent) and fanout subscribers (an exclusive, auto-delete
 * queue bound to the exchange). Each consumer has its own channel, remembers what it consumes, and
 * declares itself again on every new connection, so nobody has to re-register after an outage.
 */
import type { Channel, ConsumeMessage } from 'amqplib'
import type { MessageHandler, RpcHandler } from './bus.js'
import { errorReply, type RequestEnvelope } from './envelope.js'
import { InvalidInputError } from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'
import { type Link } from './rabbitmq-connection.js'
import { errorMessage } from '../domain/error-message.js'
import {
  isQueueTypeMismatch,
  queueTypeMismatchMessage,
  topicQueueOptions,
} from './rabbitmq-queues.js'

export const JSON_TYPE = 'application/json'

export interface ConsumerContext {
  log: Logger
  /** The fanout exchange (direct type, routing key = topic). */
  exchange: string
  prefetch: number
  /** Topic queues are quorum queues (`[oslo_messaging_rabbit] rabbit_quorum_queue`). */
  quorumQueues: boolean
  /** The live link right now, if any. */
  current(): Link<unknown> | undefined
  /** Backoff of re-declaration attempts after a failure. */
  retryDelayMs(attempt: number): number
  /** Tracks a running handler, so that close() can let it finish. */
  track(work: Promise<void>): void
  /** The channel servers publish replies on, one per connection ({@link replyChannels}). */
  replyChannel(link: Link<unknown>): Promise<Channel>
}

/**
 * One reply channel per connection, opened when first needed and again after RabbitMQ closed it
 * (a reply to a caller on a stopped node does that): never the channel a server consumes on.
 */
export function replyChannels(log: Logger): (link: Link<unknown>) => Promise<Channel> {
  const open = new WeakMap<Link<unknown>, Promise<Channel>>()
  return (link) => {
    const known = open.get(link)
    if (known) return known
    const forget = () => {
      if (open.get(link) === opening) open.delete(link)
    }
    const opening = link.model.createChannel().then((ch) => {
      ch.on('error', (err: Error) => log.debug({ err: err.message }, 'reply channel error'))
      ch.on('close', forget)
      return ch
    })
    opening.catch(forget)
    open.set(link, opening)
    return opening
  }
}

export type ConsumerKind =
  { kind: 'server'; handler: RpcHandler } | { kind: 'subscriber'; handler: MessageHandler }

export class Consumer {
  readonly topic: string
  readonly #spec: ConsumerKind
  readonly #ctx: ConsumerContext
  #active = true
  /** The link this consumer is attached (or attaching) to, and how that went. */
  #link: Link<unknown> | undefined
  #attaching: Promise<void> | undefined
  #state: 'attaching' | 'attached' | 'failed' = 'failed'
  #channel: Channel | undefined
  #tag: string | undefined
  #running = 0
  #retry: { timer: NodeJS.Timeout; attempt: number } | undefined

  constructor(topic: string, spec: ConsumerKind, ctx: ConsumerContext) {
    this.topic = topic
    this.#spec = spec
    this.#ctx = ctx
  }

  get active(): boolean {
    return this.#active
  }

  /** Declares and consumes on `link` (once per link; concurrent callers share the attempt). */
  attach(link: Link<unknown>): Promise<void> {
    if (!this.#active) return Promise.resolve()
    if (this.#link === link && this.#attaching && this.#state !== 'failed') return this.#attaching
    this.#link = link
    this.#state = 'attaching'
    const attempt = this.#attach(link)
    this.#attaching = attempt
    attempt.then(
      () => {
        if (this.#attaching !== attempt) return
        this.#state = 'attached'
        if (this.#retry) clearTimeout(this.#retry.timer)
        this.#retry = undefined
      },
      () => {
        if (this.#attaching === attempt) this.#state = 'failed'
      },
    )
    return attempt
  }

  /** Attaches on a new connection; a failure is logged and retried with backoff. */
  up(link: Link<unknown>): void {
    this.attach(link).catch((err: unknown) => this.#failed(link, err))
  }

  /** The connection is gone: the next up() attaches again. */
  lost(): void {
    this.#link = undefined
    this.#attaching = undefined
    this.#state = 'failed'
    this.#channel = undefined
    this.#tag = undefined
  }

  /** Stops consuming. Handlers already running still reply and ack; the channel closes after them. */
  async stop(): Promise<void> {
    if (!this.#active) return
    this.#active = false
    if (this.#retry) clearTimeout(this.#retry.timer)
    await this.#attaching?.catch(() => {})
    const channel = this.#channel
    if (!channel) return
    if (this.#spec.kind === 'server' && this.#tag !== undefined) {
      await channel.cancel(this.#tag).catch(() => {})
    }
    if (this.#running === 0) await this.#release(channel)
  }

  async #attach(link: Link<unknown>): Promise<void> {
    const { prefetch, exchange, quorumQueues } = this.#ctx
    const channel = await link.model.createChannel()
    channel.on('error', (err: Error) =>
      this.#ctx.log.debug({ topic: this.topic, err: err.message }, 'consumer channel error'),
    )
    channel.on('close', () => this.#closed(channel, link))
    this.#channel = channel
    try {
      if (this.#spec.kind === 'server') {
        await channel.prefetch(prefetch)
        await channel.assertQueue(this.topic, topicQueueOptions(quorumQueues)).catch((err) => {
          if (!isQueueTypeMismatch(err)) throw err
          throw new Error(queueTypeMismatchMessage(this.topic, quorumQueues), { cause: err })
        })
        const { consumerTag } = await channel.consume(
          this.topic,
          (m) => this.#deliver(channel, link, m),
          { noAck: false },
        )
        this.#tag = consumerTag
      } else {
        // Never stored: a subscriber's queue lives as long as its channel.
        const { queue } = await channel.assertQueue('', {
          exclusive: true,
          autoDelete: true,
          durable: false,
        })
        await channel.bindQueue(queue, exchange, this.topic)
        const { consumerTag } = await channel.consume(
          queue,
          (m) => this.#deliver(channel, link, m),
          { noAck: true },
        )
        this.#tag = consumerTag
      }
    } catch (err) {
      if (this.#channel === channel) this.#channel = undefined
      await channel.close().catch(() => {})
      throw err
    }
    if (!this.#active) await this.#release(channel)
  }

  #deliver(channel: Channel, link: Link<unknown>, msg: ConsumeMessage | null): void {
    if (msg === null) {
      // The broker cancelled us (the queue was deleted): declare it again.
      this.#ctx.log.warn(
        { topic: this.topic },
        `RabbitMQ cancelled the consumer of ${this.topic}; declaring it again`,
      )
      if (this.#channel === channel) this.#reattachSoon(link, channel)
      return
    }
    if (this.#spec.kind === 'subscriber') {
      if (!this.#active) return
      const handler = this.#spec.handler
      Promise.resolve()
        .then(() => handler(JSON.parse(msg.content.toString('utf8'))))
        .catch((err: unknown) =>
          this.#ctx.log.warn({ err, topic: this.topic }, 'subscriber failed'),
        )
      return
    }
    if (!this.#active || this.#channel !== channel) {
      // Arrived while we were cancelling: back to the queue for another server.
      safely(() => channel.nack(msg, false, true))
      return
    }
    this.#running += 1
    this.#ctx.track(this.#serve(this.#spec.handler, channel, link, msg))
  }

  async #serve(
    handler: RpcHandler,
    channel: Channel,
    link: Link<unknown>,
    msg: ConsumeMessage,
  ): Promise<void> {
    const { correlationId, replyTo } = msg.properties as {
      correlationId?: string
      replyTo?: string
    }
    let method = '?'
    let reply: string
    try {
      const request = parseRequest(msg.content)
      method = request.method
      reply = encodeResult(await handler(request.method, request.payload))
    } catch (err) {
      if (!replyTo)
        this.#ctx.log.warn({ err, topic: this.topic, method }, 'message without a caller failed')
      reply = JSON.stringify(errorReply(err))
    }
    let acked = false
    try {
      // Ack first, then reply on another channel: RabbitMQ 3.10 closes a channel that publishes a
      // reply to a caller whose cluster node is down, which would otherwise send the request round
      // again and again until it expires (docs/bus.md, "When a node stops or dies").
      channel.ack(msg)
      acked = true
    } catch (err) {
      // The channel is gone: the broker requeues the request for another server.
      this.#ctx.log.debug(
        { topic: this.topic, method, err: errorMessage(err) },
        'could not ack; the request goes back to the queue',
      )
    } finally {
      this.#running -= 1
      if (this.#running === 0 && !this.#active) await this.#release(channel)
    }
    if (!acked || !replyTo) return
    try {
      const replies = await this.#ctx.replyChannel(link)
      replies.publish('', replyTo, Buffer.from(reply), { correlationId, contentType: JSON_TYPE })
    } catch (err) {
      this.#ctx.log.debug(
        { topic: this.topic, method, err: errorMessage(err) },
        'could not send the reply; its caller times out or has gone',
      )
    }
  }

  #closed(channel: Channel, link: Link<unknown>): void {
    if (this.#channel !== channel) return
    this.#channel = undefined
    this.#tag = undefined
    // While attaching, the failing attach() reports it; here only a channel that was serving.
    if (this.#link !== link || this.#state !== 'attached') return
    this.#state = 'failed'
    // amqplib closes the channels just before it reports the connection closed: wait a turn to
    // tell a channel that failed alone (declare it again) from a lost connection (up() will).
    setImmediate(() => {
      if (!this.#active || !link.alive || this.#ctx.current() !== link || this.#state !== 'failed')
        return
      this.#ctx.log.warn(
        { topic: this.topic },
        `the channel of ${this.topic} closed; declaring it again`,
      )
      this.#failed(link, new Error('channel closed'))
    })
  }

  #reattachSoon(link: Link<unknown>, channel: Channel): void {
    this.#channel = undefined
    this.#tag = undefined
    this.#state = 'failed'
    channel.close().catch(() => {})
    if (this.#active && link.alive) this.up(link)
  }

  #failed(link: Link<unknown>, err: unknown): void {
    if (!this.#active || !link.alive) return
    const attempt = (this.#retry?.attempt ?? 0) + 1
    const delay = this.#ctx.retryDelayMs(attempt)
    this.#ctx.log.error(
      { topic: this.topic, err: errorMessage(err), retryInMs: delay },
      `cannot consume ${this.topic}; retrying in ${delay} ms`,
    )
    if (this.#retry) clearTimeout(this.#retry.timer)
    const timer = setTimeout(() => {
      const now = this.#ctx.current()
      // attach() does nothing when this consumer is already attached (or attaching) on `now`.
      if (now && this.#active) this.up(now)
    }, delay)
    this.#retry = { timer, attempt }
  }

  async #release(channel: Channel): Promise<void> {
    if (this.#channel === channel) this.#channel = undefined
    await channel.close().catch(() => {})
  }
}

function parseRequest(content: Buffer): RequestEnvelope {
  let request: unknown
  try {
    request = JSON.parse(content.toString('utf8'))
  } catch {
    throw new InvalidInputError('the request is not JSON', { code: 'BUS_DECODING' })
  }
  const method = (request as Partial<RequestEnvelope> | null)?.method
  if (typeof method !== 'string')
    throw new InvalidInputError('the request names no method', { code: 'BUS_DECODING' })
  return request as RequestEnvelope
}

/** The reply of a successful call; a result that is not JSON-serialisable becomes the error reply. */
function encodeResult(result: unknown): string {
  return JSON.stringify({ ok: true, result })
}

function safely(fn: () => void): void {
  try {
    fn()
  } catch {
    // the channel closed meanwhile; the broker requeues
  }
}
