/**
 * The port the event relay (event-relay.ts) delivers through: a sink takes batches of outbox
 * events in order (an oslo.messaging notifier, a log, a test's recorder). docs/notifications.md
 * describes the events and their payloads.
 */

/** One event of the outbox, as sinks receive it. */
export interface OutboxEvent {
  /** Position in the outbox (increasing). */
  id: number
  /** Stable event id (uuid) for de-duplication by receivers. */
  uuid: string
  eventType: string // 'accelerator.device.added'
  priority: 'INFO' | 'ERROR'
  resourceType: string // 'device' | 'deployable' | 'arq' | 'driver' | 'agent'
  resourceUuid: string // the resource's uuid (an agent/host: its host name)
  projectId: string | null
  /**
   * Versioned payload (docs/notifications.md): { 'cyborg_object.name', 'cyborg_object.namespace':
   * 'cyborg', 'cyborg_object.version', 'cyborg_object.data': {...} }
   */
  payload: Record<string, unknown>
  /** ISO timestamp of the change. */
  createdAt: string
}
/**
 * Where the relay delivers events. `deliver` resolves once the sink has them durably (or has
 * decided to drop them, e.g. a noop driver); it rejects to make the relay retry the same batch
 * later. Must keep order.
 */
export interface EventSink {
  readonly name: string
  deliver(events: readonly OutboxEvent[]): Promise<void>
}
