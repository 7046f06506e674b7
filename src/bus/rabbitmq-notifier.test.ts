/**
 * RabbitMqNotifier against the real broker: the exact AMQP message and entities, order, lost
 * connections, queues declared with other properties, a deleted queue. That a real oslo.messaging
 * listener decodes it is in src/conductor/outbox/oslo-notification-sink.test.ts (through the sink). Each
 * run gets a fresh vhost, dropped at the end.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { connect, type Channel, type GetMessage } from 'amqplib'
import { createRabbitMqNotifier, type RabbitMqNotifierOptions } from './rabbitmq-notifier.js'
import type { NotificationMessage, Notifier } from './notifier.js'
import { parseTransportUrl } from './transport-url.js'
import { AppError, TimeoutError } from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'
import { testBroker, type TestVhost } from '../../test/support/peers/rabbitmq.js'

const broker = await testBroker()

if (broker.skip !== undefined) {
  void it('RabbitMqNotifier', { skip: broker.skip }, () => {})
} else {
  let vhost: TestVhost
  const notifiers: Notifier[] = []
  before(async () => {
    vhost = await broker.createVhost()
  })
  after(async () => {
    await Promise.all(notifiers.map((n) => n.close()))
    await vhost?.drop()
  })

  const notifier = (options: Partial<RabbitMqNotifierOptions> = {}) => {
    const n = createRabbitMqNotifier({
      url: vhost.url,
      reconnect: { initialDelayMs: 50, maxDelayMs: 400 },
      timeoutMs: 10_000,
      ...options,
    })
    notifiers.push(n)
    return n
  }
  const topic = () => `t_${randomUUID().slice(0, 8)}`
  /** Runs `fn` on a throwaway connection (the tests close the vhost's connections). */
  const onChannel = async <T>(fn: (ch: Channel) => Promise<T>): Promise<T> => {
    const b = parseTransportUrl(vhost.url)[0]!
    const model = await connect({
      protocol: 'amqp',
      hostname: b.hostname,
      port: b.port,
      username: b.username ?? 'guest',
      password: b.password ?? 'guest',
      vhost: encodeURIComponent(b.vhost),
    })
    try {
      const ch = await model.createChannel()
      return await fn(ch)
    } finally {
      await model.close().catch(() => {})
    }
  }
  /** Takes every message waiting in `queue`. */
  const drain = (queue: string) =>
    onChannel(async (ch) => {
      const got: GetMessage[] = []
      for (
        let m = await ch.get(queue, { noAck: true });
        m;
        m = await ch.get(queue, { noAck: true })
      )
        got.push(m)
      return got
    })

  void describe('RabbitMqNotifier on the broker', () => {
    const message = (n: number, priority: 'INFO' | 'ERROR' = 'INFO'): NotificationMessage => ({
      messageId: randomUUID(),
      publisherId: 'accelerator-conductor:h',
      eventType: 'accelerator.device.added',
      priority,
      payload: { n },
      timestamp: '2026-11-25 10:12:15.123456',
    })
    const numbers = (got: GetMessage[]) =>
      got.map((m) => {
        const inner = JSON.parse(
          (JSON.parse(m.content.toString('utf8')) as Record<string, string>)['oslo.message']!,
        ) as { payload: { n: number } }
        return inner.payload.n
      })

    void it("publishes oslo's envelope 2.0 as persistent JSON on <topic>.<priority> of exchange cyborg", async () => {
      const t = topic()
      const m = message(1, 'ERROR')
      await notifier({ topics: [t, `${t}_b`] }).notify([m])
      for (const queue of [`${t}.error`, `${t}_b.error`]) {
        const [got, ...rest] = await drain(queue)
        assert.equal(rest.length, 0)
        assert.ok(got)
        assert.equal(got.fields.exchange, 'cyborg')
        assert.equal(got.fields.routingKey, queue)
        assert.equal(got.properties.contentType, 'application/json')
        assert.equal(got.properties.contentEncoding, 'utf-8')
        assert.equal(got.properties.deliveryMode, 2)
        const body = JSON.parse(got.content.toString('utf8')) as Record<string, unknown>
        assert.deepEqual(Object.keys(body).sort(), ['oslo.message', 'oslo.version'])
        assert.equal(body['oslo.version'], '2.0')
        const inner = JSON.parse(body['oslo.message'] as string) as Record<string, unknown>
        assert.match(String(inner._unique_id), /^[0-9a-f]{32}$/)
        delete inner._unique_id
        assert.deepEqual(inner, {
          message_id: m.messageId,
          publisher_id: m.publisherId,
          event_type: m.eventType,
          priority: 'ERROR',
          payload: { n: 1 },
          timestamp: m.timestamp,
        })
      }
    })

    void it('keeps the order across concurrent notify() calls', async () => {
      const t = topic()
      const n = notifier({ topics: [t] })
      const batches = Array.from({ length: 10 }, (_, b) =>
        Array.from({ length: 30 }, (_, i) => message(b * 30 + i)),
      )
      await Promise.all(batches.map((batch) => n.notify(batch)))
      assert.deepEqual(
        numbers(await drain(`${t}.info`)),
        Array.from({ length: 300 }, (_, i) => i),
      )
    })

    void it('survives a lost connection: the next notify() goes out on the new one', async () => {
      const t = topic()
      const n = notifier({ topics: [t] })
      await n.notify([message(1)])
      await vhost.closeConnections()
      await n.notify([message(2)])
      assert.deepEqual(numbers(await drain(`${t}.info`)), [1, 2])
    })

    void it('waits for a broker that refuses it at first, and for a connection lost mid-batch', async () => {
      const t = topic()
      await vhost.setAccess(false)
      const n = notifier({ topics: [t] })
      const first = n.notify([message(0)])
      await sleep(300)
      await vhost.setAccess(true)
      await first
      const big = Array.from({ length: 3000 }, (_, i) => message(i + 1))
      const sent = n.notify(big)
      await vhost.closeConnections()
      await sent
      // Sent again whole when the connection went mid-batch: each number at least once, in order
      // of first appearance.
      const seen: number[] = []
      for (const x of numbers(await drain(`${t}.info`))) if (!seen.includes(x)) seen.push(x)
      assert.deepEqual(
        seen,
        Array.from({ length: 3001 }, (_, i) => i),
      )
    })

    void it('a queue deleted behind its back fails one notify(), then is declared again', async () => {
      const t = topic()
      const n = notifier({ topics: [t] })
      await n.notify([message(1)])
      await vhost.deleteQueue(`${t}.info`)
      await assert.rejects(n.notify([message(2)]), { code: 'BUS_UNROUTABLE' })
      await n.notify([message(3)])
      assert.deepEqual(numbers(await drain(`${t}.info`)), [3])
    })

    void it('uses an exchange and queue that exist with other properties (amqp_durable_queues = true) as they are', async () => {
      const t = topic()
      const exchange = `ex_${t}`
      await onChannel(async (ch) => {
        await ch.assertExchange(exchange, 'topic', { durable: true })
        await ch.assertQueue(`${t}.info`, { durable: true })
      })
      const lines: string[] = []
      await notifier({ topics: [t], exchange, log: capture(lines) }).notify([message(7)])
      const [got] = await drain(`${t}.info`)
      assert.equal(got?.fields.exchange, exchange)
      assert.deepEqual(numbers(got ? [got] : []), [7])
      for (const what of [`exchange ${exchange}`, `queue ${t}.info`])
        assert.ok(
          lines.some((l) => l.includes(`the ${what} exists with other properties`)),
          what,
        )
    })

    void it('times out when no broker answers, and fails after close()', async () => {
      const n = notifier({ url: 'rabbit://guest:guest@127.0.0.1:1/', timeoutMs: 300 })
      await assert.rejects(n.notify([message(1)]), TimeoutError)
      await n.close()
      await assert.rejects(
        n.notify([message(2)]),
        (err: unknown) => err instanceof AppError && err.code === 'BUS_CLOSED',
      )
    })
  })
}

function capture(lines: string[]): Logger {
  const write = (...args: unknown[]) =>
    void lines.push(args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' '))
  const log: Logger = { error: write, warn: write, info: write, debug: write, child: () => log }
  return log
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
