/**
 * Why a failed accelerator request failed (microversion 2.10's `state_reason`): the reason its
 * newest `accelerator.arq.bind_failed` or `.unbind_failed` event carries. The request row keeps no
 * reason of its own; the event outbox keeps sent events for `[events] retention_hours`, so the
 * reason of an older failure is gone (undefined here).
 */
import type { ReadDb } from '../core/connection.js'
import type { ArqState } from '../../domain/arq.js'

/** The states whose reason an event holds. */
export const FAILED_ARQ_STATES: readonly ArqState[] = ['BindFailed', 'UnbindFailed']

const FAILURE_EVENTS = ['accelerator.arq.bind_failed', 'accelerator.arq.unbind_failed']

/** Uuids per IN list. */
const CHUNK = 500

/** The reason in an ArqPayload's text, or undefined when it has none. */
function reasonOf(payload: string): string | undefined {
  try {
    const parsed = JSON.parse(payload) as { 'cyborg_object.data'?: { reason?: unknown } }
    const reason = parsed['cyborg_object.data']?.reason
    return typeof reason === 'string' && reason !== '' ? reason : undefined
  } catch {
    return undefined
  }
}

/**
 * The newest failure reason of each of `uuids` that an event still holds (uuid → reason). One
 * query per 500 uuids; the events table is bounded by its retention.
 */
export async function arqFailureReasons(
  db: ReadDb,
  uuids: readonly string[],
): Promise<Map<string, string>> {
  const reasons = new Map<string, string>()
  const unique = [...new Set(uuids)]
  for (let i = 0; i < unique.length; i += CHUNK) {
    const rows = await db
      .selectFrom('events')
      .select(['resource_uuid', 'payload'])
      .where('resource_type', '=', 'arq')
      .where('event_type', 'in', FAILURE_EVENTS)
      .where('resource_uuid', 'in', unique.slice(i, i + CHUNK))
      .orderBy('id', 'desc')
      .execute()
    for (const row of rows) {
      if (reasons.has(row.resource_uuid)) continue
      const reason = reasonOf(row.payload)
      if (reason !== undefined) reasons.set(row.resource_uuid, reason)
    }
  }
  return reasons
}
