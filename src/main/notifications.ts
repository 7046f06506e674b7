/**
 * The conductor's event sinks from cyborg.conf (docs/notifications.md): oslo.messaging notifications
 * on RabbitMQ when `[oslo_messaging_notifications] driver = messagingv2`. Webhooks need nothing
 * here (the conductor builds their sink itself). A bad setting stops the conductor at start.
 */
import type { Logger } from 'pino'
import type { Config } from '../config/config.js'
import { createRabbitMqNotifier } from '../bus/rabbitmq-notifier.js'
import type { EventSink } from '../conductor/outbox/event-sinks.js'
import {
  createOsloNotificationSink,
  notificationPublisherId,
  notificationTransportUrl,
} from '../conductor/outbox/oslo-notification-sink.js'

export interface ConfiguredSinks {
  sinks: EventSink[]
  /** Closes what the sinks opened; call after the conductor (and its relay) stopped. */
  close(): Promise<void>
}

export function eventSinks(config: Config, log: Logger): ConfiguredSinks {
  const url = notificationTransportUrl(config)
  if (url === undefined) return { sinks: [], close: async () => {} }
  const notifier = createRabbitMqNotifier({
    url,
    topics: config.oslo_messaging_notifications.topics,
    log: log.child({ component: 'notifier' }),
    // Below the relay's delivery timeout (30 s), so that the notifier's own error is the one logged.
    timeoutMs: 25_000,
    connectionName: `cyborg-notifier@${config.DEFAULT.host}`,
  })
  const publisherId = notificationPublisherId(config.DEFAULT.host)
  log.info({ topics: config.oslo_messaging_notifications.topics }, 'oslo notifications on')
  return {
    sinks: [createOsloNotificationSink(notifier, { publisherId })],
    close: () => notifier.close(),
  }
}
