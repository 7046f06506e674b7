/**
 * InProcessBus: the MessageBus for embedded mode. It behaves like a broker would, so that code
 * that works here works over RabbitMQ too: payloads, results and errors go through JSON; a call to
 * a topic nobody serves yet waits in the topic's queue until a server comes or the call times out;
 * servers of one topic take turns (round-robin); handlers always run asynchronously.
 */
import type { CallOptions, MessageBus, MessageHandler, RpcHandler, Subscription } from './bus.js'
import {
  errorReply,
  okReply,
  toJson,
  unwrapReply,
  type ReplyEnvelope,
  type RequestEnvelope,
} from './envelope.js'
import { AppError, InvalidInputError, TimeoutError, UnavailableError } from '../domain/errors.js'

/** Options of {@link createInProcessBus}. */
export interface InProcessBusOptions {
  /** Default call timeout. @default 30000 */
  defaultTimeoutMs?: number
  /** Sees errors that have no caller to go to: failed casts and failing subscribers. @default ignore */
  onError?: (err: unknown, context: { topic: string; method?: string }) => void
}

interface Delivery {
  request: RequestEnvelope
  /** Absent for casts. */
  reply?: (reply: ReplyEnvelope) => void
}

interface Topic {
  servers: RpcHandler[]
  next: number
  queue: Delivery[]
  subscribers: Set<MessageHandler>
}

/** The request as a broker would carry it: through JSON, or a clear error naming the call. */
function encode(topic: string, method: string, payload: unknown): RequestEnvelope {
  try {
    return toJson({ method, payload }) as RequestEnvelope
  } catch (cause) {
    throw new InvalidInputError(`payload of ${topic}.${method} is not JSON-serialisable`, {
      code: 'BUS_ENCODING',
      cause,
    })
  }
}

/** Creates an in-process bus. Each bus is its own broker: two buses do not see each other. */
export function createInProcessBus(options: InProcessBusOptions = {}): MessageBus {
  const { defaultTimeoutMs = 30_000, onError = () => {} } = options
  const topics = new Map<string, Topic>()
  const pending = new Set<(err: AppError) => void>()
  let closed = false

  const topicOf = (name: string): Topic => {
    let t = topics.get(name)
    if (!t) {
      t = { servers: [], next: 0, queue: [], subscribers: new Set() }
      topics.set(name, t)
    }
    return t
  }

  /** Hands a delivery to the next server, or queues it until one serves the topic. */
  const dispatch = (topic: string, delivery: Delivery) => {
    const t = topicOf(topic)
    const server = t.servers[t.next++ % t.servers.length]
    if (!server) {
      t.queue.push(delivery)
      return
    }
    setImmediate(() => void run(topic, server, delivery))
  }

  const run = async (topic: string, server: RpcHandler, { request, reply }: Delivery) => {
    if (closed) return
    let envelope: ReplyEnvelope
    try {
      envelope = okReply(await server(request.method, request.payload))
    } catch (err) {
      envelope = errorReply(err)
    }
    if (reply) reply(envelope)
    else if (!envelope.ok) onError(unwrapError(envelope), { topic, method: request.method })
  }

  const assertOpen = () => {
    if (closed) throw new UnavailableError('the bus is closed', { code: 'BUS_CLOSED' })
  }

  return {
    async call(topic, method, payload, callOptions: CallOptions = {}) {
      assertOpen()
      const { timeoutMs = defaultTimeoutMs, signal } = callOptions
      const request = encode(topic, method, payload)
      if (signal?.aborted) throw aborted(topic, method, signal)
      return new Promise((resolve, reject) => {
        let delivery: Delivery | undefined
        const settle = (fn: () => void) => {
          if (!delivery) return
          const queue = topics.get(topic)?.queue
          const i = queue?.indexOf(delivery) ?? -1
          if (i >= 0) queue?.splice(i, 1) // expired before any server took it
          delivery = undefined
          clearTimeout(timer)
          signal?.removeEventListener('abort', onAbort)
          pending.delete(fail)
          fn()
        }
        const fail = (err: AppError) => settle(() => reject(err))
        const onAbort = () => fail(aborted(topic, method, signal))
        const timer = setTimeout(
          () => fail(new TimeoutError(`no reply to ${topic}.${method} within ${timeoutMs} ms`)),
          timeoutMs,
        )
        signal?.addEventListener('abort', onAbort, { once: true })
        pending.add(fail)
        delivery = {
          request,
          reply: (envelope) =>
            settle(() => {
              try {
                resolve(unwrapReply(envelope))
              } catch (err) {
                reject(err as Error)
              }
            }),
        }
        dispatch(topic, delivery)
      })
    },

    async cast(topic, method, payload) {
      assertOpen()
      dispatch(topic, { request: encode(topic, method, payload) })
    },

    async serve(topic, handler) {
      assertOpen()
      const t = topicOf(topic)
      t.servers.push(handler)
      // Requests that waited for a server: hand them out now, in order.
      for (const delivery of t.queue.splice(0)) dispatch(topic, delivery)
      let active = true
      return subscription(() => {
        if (!active) return
        active = false
        const i = t.servers.indexOf(handler)
        if (i >= 0) t.servers.splice(i, 1)
      })
    },

    async publish(topic, message) {
      assertOpen()
      const body = encode(topic, 'publish', message).payload
      for (const handler of topics.get(topic)?.subscribers ?? []) {
        // Each subscriber gets its own copy, as each gets its own queue on a broker.
        const copy = toJson(body)
        setImmediate(() => {
          Promise.resolve()
            .then(() => handler(copy))
            .catch((err: unknown) => onError(err, { topic }))
        })
      }
    },

    async subscribe(topic, handler) {
      assertOpen()
      // Wrap so that one function subscribed twice counts as two subscribers.
      const own: MessageHandler = (m) => handler(m)
      topicOf(topic).subscribers.add(own)
      return subscription(() => {
        topics.get(topic)?.subscribers.delete(own)
      })
    },

    status: () =>
      closed ? { state: 'closed', detail: 'closed' } : { state: 'up', detail: 'in-process' },

    async close() {
      if (closed) return
      closed = true
      topics.clear()
      const err = new UnavailableError('the bus was closed before a reply arrived', {
        code: 'BUS_CLOSED',
      })
      for (const fail of [...pending]) fail(err)
    },
  }
}

function subscription(stop: () => void): Subscription {
  return { unsubscribe: async () => stop() }
}

function aborted(topic: string, method: string, signal: AbortSignal | undefined): AppError {
  return new AppError(`call ${topic}.${method} was aborted`, {
    code: 'ABORTED',
    cause: signal?.reason,
  })
}

function unwrapError(envelope: ReplyEnvelope): unknown {
  try {
    return unwrapReply(envelope)
  } catch (err) {
    return err
  }
}
