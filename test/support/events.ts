/** Events to write into the outbox in tests (src/db/outbox/events.ts's insertEvents). */
import type { NewEvent } from '../../src/domain/events.js'

let n = 0

/** An event of `type` (`accelerator.<resource>.<action>`) about `resourceUuid`. */
export function anEvent(
  type: string,
  resourceUuid: string,
  project: string | null = null,
  priority: 'INFO' | 'ERROR' = 'INFO',
): NewEvent {
  n++
  return {
    uuid: `e0000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    eventType: type,
    priority,
    resourceType: type.split('.')[1] as NewEvent['resourceType'],
    resourceUuid,
    projectId: project,
    payload: {
      'cyborg_object.name': 'DevicePayload',
      'cyborg_object.namespace': 'cyborg',
      'cyborg_object.version': '1.0',
      'cyborg_object.data': { n },
    },
    createdAt: `2026-11-28T10:00:${String(n % 60).padStart(2, '0')}.000000+00:00`,
  }
}

/** How many {@link anEvent} made so far (the last one's payload says `{ n }`). */
export function eventCount(): number {
  return n
}
