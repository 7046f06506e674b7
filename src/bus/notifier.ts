/**
 * The Notifier port: OpenStack notifications out of Cyborg, in oslo.messaging's format, so that
 * Ceilometer, Watcher or any oslo notification listener reads them unchanged. The RabbitMQ
 * implementation is rabbitmq-notifier.ts; the wire format is in docs/notifications.md.
 *
 * The pure part of the format lives here: the priorities, the routing key, the message envelope
 * (oslo_messaging/_drivers/common.py serialize_msg) and the timestamp.
 */
import { randomUUID } from 'node:crypto'
import { InvalidInputError } from '../domain/errors.js'

/** oslo.messaging's priorities (oslo_messaging/notify/dispatcher.py PRIORITIES, upper-cased). */
export const NotificationPriority = {
  AUDIT: 'AUDIT',
  DEBUG: 'DEBUG',
  INFO: 'INFO',
  WARN: 'WARN',
  ERROR: 'ERROR',
  CRITICAL: 'CRITICAL',
  SAMPLE: 'SAMPLE',
} as const
export type NotificationPriority = (typeof NotificationPriority)[keyof typeof NotificationPriority]

/** One notification, as oslo.messaging's Notifier builds it (notify/notifier.py `_notify`). */
export interface NotificationMessage {
  /** A UUID; receivers de-duplicate on it, so a re-sent notification keeps its id. */
  messageId: string
  /** Who sent it: `accelerator-conductor:<host>`. */
  publisherId: string
  /** `accelerator.<resource>.<action>`, e.g. `accelerator.device.health_changed`. */
  eventType: string
  priority: NotificationPriority
  payload: Record<string, unknown>
  /** UTC, as Python's `str(datetime)`: `2026-11-25 10:12:15.123456`; see {@link osloTimestamp}. */
  timestamp: string
  /**
   * The request context, sent as oslo's `_context_<key>` fields; a listener's endpoint receives it
   * as `ctxt`. Only what may be shown to every consumer (a project id, never a token).
   */
  context?: Readonly<Record<string, string>>
}

export interface Notifier {
  /**
   * Sends the messages in order. Resolves once the broker has accepted every one of them;
   * rejects (UnavailableError, TimeoutError) when that is not known, and then some of them may
   * have been sent: a caller that retries sends them again, with the same message ids.
   */
  notify(messages: readonly NotificationMessage[]): Promise<void>
  /** Closes the connection; later notify() calls fail with UnavailableError (code BUS_CLOSED). Idempotent. */
  close(): Promise<void>
}

/**
 * oslo's `noop` driver (and its default: no driver at all): accepts everything, sends nothing.
 */
export function createNoopNotifier(): Notifier {
  return {
    notify: () => Promise.resolve(),
    close: () => Promise.resolve(),
  }
}

/** `notifications.info`: the routing key and queue of `topic` at `priority` (notify/messaging.py). */
export function notificationRoutingKey(topic: string, priority: NotificationPriority): string {
  return `${topic}.${priority.toLowerCase()}`
}

/**
 * The AMQP body of one notification: message envelope 2.0, the message as a JSON string inside
 * JSON (oslo_messaging/_drivers/common.py serialize_msg), with the fields the rabbit driver adds on
 * the way (amqpdriver.py `_send`): a fresh `_unique_id` per send and the context as `_context_*`.
 *
 * `_unique_id` is random, never the message id: oslo's listener drops a message whose unique id it
 * has seen among its last 16 *without acknowledging it*, so re-using ids on a re-send would leave
 * unacked messages behind. Receivers de-duplicate on `message_id` instead.
 */
export function encodeNotification(message: NotificationMessage): Buffer {
  const inner: Record<string, unknown> = {
    message_id: message.messageId,
    publisher_id: message.publisherId,
    event_type: message.eventType,
    priority: message.priority,
    payload: message.payload,
    timestamp: message.timestamp,
    _unique_id: randomUUID().replaceAll('-', ''),
  }
  for (const [key, value] of Object.entries(message.context ?? {})) inner[`_context_${key}`] = value
  let text: string
  try {
    text = JSON.stringify(inner)
  } catch (cause) {
    throw new InvalidInputError(`the payload of ${message.eventType} is not JSON-serialisable`, {
      code: 'BUS_ENCODING',
      cause,
    })
  }
  return Buffer.from(JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': text }))
}

const SQL_OR_ISO =
  /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?$/i

/**
 * A time in oslo's notification format: Python's `str(timeutils.utcnow())`, i.e. UTC without a
 * zone, `2026-11-25 10:12:15.123456`, and without the fraction when it is zero, as Python prints it.
 * Accepts a Date, an ISO 8601 string (any offset), or an SQL `YYYY-MM-DD HH:MM:SS[.ffffff]` taken
 * as UTC. Digits past the millisecond survive when the input is UTC.
 * @throws InvalidInputError (code `BUS_ENCODING`) for anything else
 */
export function osloTimestamp(time: Date | string): string {
  if (typeof time === 'string') {
    const m = SQL_OR_ISO.exec(time.trim())
    const zone = m?.[4]
    if (m && (zone === undefined || /^(Z|[+-]00:?00)$/i.test(zone)))
      return python(`${m[1]} ${m[2]}`, (m[3] ?? '').slice(0, 6))
  }
  const date = typeof time === 'string' ? new Date(time) : time
  if (Number.isNaN(date.getTime()))
    throw new InvalidInputError(`not a time: ${String(time)}`, { code: 'BUS_ENCODING' })
  const iso = date.toISOString() // 2026-11-25T10:12:15.123Z
  return python(`${iso.slice(0, 10)} ${iso.slice(11, 19)}`, iso.slice(20, 23))
}

function python(seconds: string, fraction: string): string {
  const micros = fraction.padEnd(6, '0')
  return micros === '000000' ? seconds : `${seconds}.${micros}`
}
