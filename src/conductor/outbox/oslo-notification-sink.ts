/**
 * The outbox relay's sink for OpenStack notifications: each outbox event becomes one oslo.messaging
 * notification (docs/notifications.md), sent through a Notifier (src/bus/notifier.ts). The
 * message id is the event's uuid, so that a receiver de-duplicates what the relay sent twice
 * (after a lost confirm, a broker restart, a conductor restart).
 */
import { ConfigError } from '../../domain/errors.js'
import type { Config } from '../../config/config.js'
import { osloTimestamp, type NotificationMessage, type Notifier } from '../../bus/notifier.js'
import type { EventSink, OutboxEvent } from './event-sinks.js'

/** Options of {@link createOsloNotificationSink}. */
export interface OsloNotificationSinkOptions {
  /** `accelerator-conductor:<host>`; see {@link notificationPublisherId}. */
  publisherId: string
  /** The sink's name in the relay's logs. @default 'oslo-notifications' */
  name?: string
}

/** An EventSink that sends every event, in order, as an oslo notification. */
export function createOsloNotificationSink(
  notifier: Notifier,
  { publisherId, name = 'oslo-notifications' }: OsloNotificationSinkOptions,
): EventSink {
  return {
    name,
    deliver: (events) => notifier.notify(events.map((e) => toNotification(e, publisherId))),
  }
}

/** `accelerator-conductor:<host>`, the publisher_id of the conductor on `host`. */
export function notificationPublisherId(host: string): string {
  return `accelerator-conductor:${host}`
}

/**
 * One outbox event as an oslo notification. `event_type` is `accelerator.<resource>.<action>`: an
 * event type without the `accelerator.` prefix gets it. The event's project, when it has one,
 * travels as the context's `project_id` (what an oslo listener's endpoint receives as `ctxt`).
 */
export function toNotification(event: OutboxEvent, publisherId: string): NotificationMessage {
  return {
    messageId: event.uuid,
    publisherId,
    eventType: event.eventType.startsWith('accelerator.')
      ? event.eventType
      : `accelerator.${event.eventType}`,
    priority: event.priority,
    payload: event.payload,
    timestamp: osloTimestamp(event.createdAt),
    ...(event.projectId === null ? {} : { context: { project_id: event.projectId } }),
  }
}

/**
 * Where notifications go: undefined for `driver = noop` (send nothing), else the transport URL,
 * `[oslo_messaging_notifications] transport_url` or else `[DEFAULT] transport_url`.
 * @throws ConfigError when messagingv2 has no RabbitMQ to go to, or no topic
 */
export function notificationTransportUrl(
  config: Pick<Config, 'DEFAULT' | 'oslo_messaging_notifications'>,
): string | undefined {
  const n = config.oslo_messaging_notifications
  if (n.driver === 'noop') return undefined
  if (n.topics.length === 0)
    throw new ConfigError(
      '[oslo_messaging_notifications] driver = messagingv2 with no topics would send nothing; set topics (e.g. notifications) or driver = noop',
    )
  const url = n.transport_url || config.DEFAULT.transport_url
  if (url === '')
    throw new ConfigError(
      '[oslo_messaging_notifications] driver = messagingv2 needs RabbitMQ: ' +
        'set [oslo_messaging_notifications] transport_url or [DEFAULT] transport_url (rabbit://user:pass@host:5672/vhost)',
    )
  return url
}
