/**
 * The oslo notification sink: the mapping from outbox events, oslo's timestamp, where the
 * configuration sends notifications; then, against the real broker, a real oslo.messaging
 * notification listener (test/support/peers/oslo-listener.py, as Ceilometer runs one) decoding what the
 * sink sends.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { createRabbitMqBus } from '../../bus/rabbitmq-bus.js'
import {
  createNoopNotifier,
  encodeNotification,
  osloTimestamp,
  type NotificationMessage,
  type Notifier,
} from '../../bus/notifier.js'
import { createRabbitMqNotifier } from '../../bus/rabbitmq-notifier.js'
import { ConfigError, InvalidInputError } from '../../domain/errors.js'
import {
  createOsloNotificationSink,
  notificationPublisherId,
  notificationTransportUrl,
  toNotification,
} from './oslo-notification-sink.js'
import { testBroker, type TestVhost } from '../../../test/support/peers/rabbitmq.js'
import { osloListenerSkip, startOsloListener } from '../../../test/support/peers/oslo-listener.js'

const event = (n: number, eventType: string, priority: 'INFO' | 'ERROR') => ({
  id: n,
  uuid: randomUUID(),
  eventType,
  priority,
  resourceType: eventType.split('.')[1] ?? 'device',
  resourceUuid: randomUUID(),
  projectId: n === 2 ? 'b5f0d1c2a3e44f5e8c7d6b5a49382716' : null,
  payload: { n, name: `thing-${n}`, nested: { ok: true, list: [1, 'two'] } },
  createdAt: `2026-11-25T10:12:1${n}.12345${n}Z`,
})

void describe('oslo notification sink (pure)', () => {
  void it("formats times as oslo does (Python's str of a UTC datetime)", () => {
    assert.equal(osloTimestamp('2026-11-25T10:12:15.123Z'), '2026-11-25 10:12:15.123000')
    assert.equal(osloTimestamp('2026-11-25T10:12:15.1234567+00:00'), '2026-11-25 10:12:15.123456')
    assert.equal(osloTimestamp('2026-11-25 10:12:15.5'), '2026-11-25 10:12:15.500000')
    assert.equal(osloTimestamp('2026-11-25T10:12:15Z'), '2026-11-25 10:12:15')
    assert.equal(osloTimestamp('2026-11-25T11:12:15.250+01:00'), '2026-11-25 10:12:15.250000')
    assert.equal(
      osloTimestamp(new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6))),
      '2026-01-02 03:04:05.006000',
    )
    assert.throws(() => osloTimestamp('yesterday'), InvalidInputError)
  })

  void it('maps an outbox event: uuid as message id, accelerator.* event type, project as context', () => {
    const e = event(2, 'arq.bound', 'INFO')
    assert.deepEqual(toNotification(e, notificationPublisherId('ctl-1')), {
      messageId: e.uuid,
      publisherId: 'accelerator-conductor:ctl-1',
      eventType: 'accelerator.arq.bound',
      priority: 'INFO',
      payload: e.payload,
      timestamp: '2026-11-25 10:12:12.123452',
      context: { project_id: 'b5f0d1c2a3e44f5e8c7d6b5a49382716' },
    })
    const noProject = toNotification(event(1, 'accelerator.device.added', 'ERROR'), 'p')
    assert.equal(noProject.eventType, 'accelerator.device.added')
    assert.equal(noProject.context, undefined)
  })

  void it("encodes oslo's envelope 2.0 with a fresh _unique_id and the context as _context_*", () => {
    const m: NotificationMessage = {
      messageId: 'm-1',
      publisherId: 'p',
      eventType: 'accelerator.device.added',
      priority: 'INFO',
      payload: { name: 'é' },
      timestamp: '2026-11-25 10:12:15',
      context: { project_id: 'proj' },
    }
    const decode = (b: Buffer) => {
      const outer = JSON.parse(b.toString('utf8')) as Record<string, string>
      assert.equal(outer['oslo.version'], '2.0')
      return JSON.parse(outer['oslo.message']!) as Record<string, unknown>
    }
    const a = decode(encodeNotification(m))
    const b = decode(encodeNotification(m))
    assert.notEqual(a._unique_id, b._unique_id)
    assert.equal(a._context_project_id, 'proj')
    assert.deepEqual(a.payload, { name: 'é' })
    assert.throws(
      () => encodeNotification({ ...m, payload: { big: 1n } }),
      (err: unknown) => err instanceof InvalidInputError && err.code === 'BUS_ENCODING',
    )
  })

  void it('delivers through the notifier in order; noop sends nothing', async () => {
    const sent: NotificationMessage[][] = []
    const recording: Notifier = {
      notify: async (messages) => void sent.push([...messages]),
      close: async () => {},
    }
    const sink = createOsloNotificationSink(recording, { publisherId: 'p' })
    assert.equal(sink.name, 'oslo-notifications')
    const events = [event(1, 'device.added', 'INFO'), event(3, 'device.health_changed', 'ERROR')]
    await sink.deliver(events)
    assert.deepEqual(
      sent.map((batch) => batch.map((m) => m.messageId)),
      [events.map((e) => e.uuid)],
    )
    await createOsloNotificationSink(createNoopNotifier(), { publisherId: 'p' }).deliver(events)
  })

  void it('sends to [oslo_messaging_notifications] transport_url, else [DEFAULT] transport_url', () => {
    const config = (driver: 'noop' | 'messagingv2', own: string, main: string, topics = ['n']) => ({
      DEFAULT: { transport_url: main } as never,
      oslo_messaging_notifications: { driver, topics, transport_url: own },
    })
    assert.equal(notificationTransportUrl(config('noop', '', 'rabbit://a/')), undefined)
    assert.equal(notificationTransportUrl(config('messagingv2', '', 'rabbit://a/')), 'rabbit://a/')
    assert.equal(
      notificationTransportUrl(config('messagingv2', 'rabbit://n/', 'rabbit://a/')),
      'rabbit://n/',
    )
    assert.throws(() => notificationTransportUrl(config('messagingv2', '', '')), ConfigError)
    assert.throws(
      () => notificationTransportUrl(config('messagingv2', '', 'rabbit://a/', [])),
      ConfigError,
    )
  })
})

const broker = await testBroker()
const skip = broker.skip ?? (await osloListenerSkip())

void describe('oslo notification sink with a real oslo.messaging listener', { skip }, () => {
  let vhost: TestVhost
  const notifiers: Notifier[] = []
  before(async () => {
    vhost = await broker.createVhost()
  })
  after(async () => {
    await Promise.all(notifiers.map((n) => n.close()))
    await vhost?.drop()
  })
  const sink = (topics?: string[]) => {
    const n = createRabbitMqNotifier({ url: vhost.url, timeoutMs: 10_000, topics })
    notifiers.push(n)
    return createOsloNotificationSink(n, { publisherId: notificationPublisherId('ctl-1') })
  }

  void it('decodes what the sink sends: event type, publisher, priority, payload, id, time', async () => {
    const listener = await startOsloListener({ url: vhost.url, count: 3 })
    try {
      const events = [
        event(1, 'accelerator.device.added', 'INFO'),
        event(2, 'accelerator.arq.bound', 'INFO'),
        event(3, 'accelerator.device.health_changed', 'ERROR'),
      ]
      await sink().deliver(events)
      const got = await listener.received
      assert.equal(got.length, 3)
      const byId = new Map(got.map((g) => [g.metadata.message_id, g]))
      for (const [i, e] of events.entries()) {
        const g = byId.get(e.uuid)
        assert.ok(g, `${e.eventType} received`)
        assert.equal(g.event_type, e.eventType)
        assert.equal(g.publisher_id, 'accelerator-conductor:ctl-1')
        assert.equal(g.priority, e.priority.toLowerCase())
        assert.deepEqual(g.payload, e.payload)
        assert.equal(g.metadata.timestamp, `2026-11-25 10:12:1${i + 1}.12345${i + 1}`)
        assert.equal(g.ctxt.project_id, e.projectId ?? undefined)
      }
      // The two INFO notifications share one queue, so they arrive in order.
      const info = got.filter((g) => g.priority === 'info').map((g) => g.event_type)
      assert.deepEqual(info, ['accelerator.device.added', 'accelerator.arq.bound'])
    } finally {
      listener.stop()
    }
  })

  void it('shares a vhost with the bus: its publish/subscribe exchange leaves `cyborg` to oslo', async () => {
    const bus = await createRabbitMqBus({ url: vhost.url })
    try {
      await bus.publish('cyborg.telemetry', { host: 'h1' }) // declares the bus's exchange
      const listener = await startOsloListener({ url: vhost.url, count: 1 })
      try {
        const e = event(5, 'accelerator.device.added', 'INFO')
        await sink().deliver([e])
        const [got] = await listener.received
        assert.equal(got?.metadata.message_id, e.uuid)
      } finally {
        listener.stop()
      }
    } finally {
      await bus.close()
    }
  })

  void it('a notification sent before any listener ran waits in its queue', async () => {
    const topic = `late_${randomUUID().slice(0, 8)}`
    const early = event(4, 'accelerator.device.health_changed', 'ERROR')
    await sink([topic]).deliver([early])
    const listener = await startOsloListener({ url: vhost.url, topic, count: 1 })
    try {
      const [got] = await listener.received
      assert.equal(got?.metadata.message_id, early.uuid)
      assert.equal(got?.priority, 'error')
      assert.equal(got?.event_type, 'accelerator.device.health_changed')
    } finally {
      listener.stop()
    }
  })
})
