/**
 * Live updates: the events the API streams (server-sent events from the event outbox,
 * docs/notifications.md "Events"). A page subscribes while it is shown and reads again when an event
 * of what it draws arrives, so a fenced device turns red with no reload.
 *
 * Not connected yet: {@link subscribeEvents} delivers nothing until the stream exists.
 */

/** One event as the API's event stream sends it (the outbox row, snake_case). */
export interface LiveEvent {
  id: number
  uuid: string
  event_type: string
  priority: 'INFO' | 'ERROR'
  resource_type: 'device' | 'deployable' | 'arq' | 'driver' | 'agent'
  resource_uuid: string
  project_id: string | null
  payload: Record<string, unknown>
  created_at: string
}

/** Calls `onEvent` for each event from now on; returns the unsubscribe. */
export function subscribeEvents(onEvent: (e: LiveEvent) => void): () => void {
  void onEvent
  return () => {}
}
