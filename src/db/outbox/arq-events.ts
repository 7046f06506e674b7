/**
 * Accelerator request events, written in the transaction that changes the request: the request as
 * given (as saved, or as it was just before its binding was cleared or its row deleted), with the
 * name of its device profile and the handle it holds looked up in at most two reads, then one
 * INSERT of every event.
 */
import type { Kysely } from 'kysely'
import type { Arq } from '../../domain/arq.js'
import { arqEvent, type ArqAction, type ArqFacts } from '../../domain/events.js'
import { insertEvents } from './events.js'
import type { Database } from '../core/schema.js'

/** Ids per IN list. */
const CHUNK = 500

export interface ArqEventItem {
  arq: Arq
  action: ArqAction
  /** Why a bind or an unbind failed. */
  reason?: string | null
  /** The request's device profile name when the caller has it (saves the lookup). */
  profileName?: string
  /** The handle the request holds, when the caller has it (saves the lookup; issue 28). */
  handle?: {
    id: number
    uuid: string
    type: string
    info: Record<string, unknown>
    mdevUuid?: string | null
  }
}

/** The `attach_handle_uuid` an event shows: an MDEV handle's mdev uuid (as the API does). */
const shownUuid = (type: string, uuid: string, mdevUuid: string | null | undefined): string =>
  type === 'MDEV' ? (mdevUuid ?? uuid) : uuid

async function byIds<R>(
  ids: readonly number[],
  query: (chunk: number[]) => Promise<R[]>,
): Promise<R[]> {
  const unique = [...new Set(ids)]
  const out: R[] = []
  for (let i = 0; i < unique.length; i += CHUNK)
    out.push(...(await query(unique.slice(i, i + CHUNK))))
  return out
}

/** A looked-up handle row as the event gives it. */
function toFound(
  row:
    | { uuid: string; attach_type: string; attach_info: string; mdev_uuid: string | null }
    | undefined,
): { uuid: string; attach_type: string; info: Record<string, unknown> } | undefined {
  return (
    row && {
      uuid: shownUuid(row.attach_type, row.uuid, row.mdev_uuid),
      attach_type: row.attach_type,
      info: JSON.parse(row.attach_info) as Record<string, unknown>,
    }
  )
}

/** Writes one event per item, in item order (one INSERT). */
export async function recordArqEvents(
  db: Kysely<Database>,
  items: readonly ArqEventItem[],
  now: string,
): Promise<void> {
  if (items.length === 0) return
  const profileIds = items.flatMap((i) =>
    i.arq.deviceProfileId !== null && i.profileName === undefined ? [i.arq.deviceProfileId] : [],
  )
  const profiles = await byIds(profileIds, (ids) =>
    db.selectFrom('device_profiles').select(['id', 'name']).where('id', 'in', ids).execute(),
  )
  const names = new Map(profiles.map((p) => [p.id, p.name]))
  const handleIds = items.flatMap((i) =>
    i.arq.attachHandleId === null || i.handle?.id === i.arq.attachHandleId
      ? []
      : [i.arq.attachHandleId],
  )
  const handles = await byIds(handleIds, (ids) =>
    db
      .selectFrom('attach_handles')
      .select(['id', 'uuid', 'attach_type', 'attach_info', 'mdev_uuid'])
      .where('id', 'in', ids)
      .execute(),
  )
  const byId = new Map(handles.map((h) => [h.id, h]))
  const events = items.map(({ arq, action, reason = null, profileName, handle: given }) => {
    const handle =
      arq.attachHandleId === null
        ? undefined
        : given?.id === arq.attachHandleId
          ? {
              uuid: shownUuid(given.type, given.uuid, given.mdevUuid),
              attach_type: given.type,
              info: given.info,
            }
          : toFound(byId.get(arq.attachHandleId))
    const facts: ArqFacts = {
      uuid: arq.uuid,
      state: arq.state,
      deviceProfileName:
        profileName ??
        (arq.deviceProfileId === null ? null : (names.get(arq.deviceProfileId) ?? null)),
      deviceProfileGroupId: arq.deviceProfileGroupId,
      projectId: arq.projectId,
      hostname: arq.hostname,
      deviceRpUuid: arq.deviceRpUuid,
      instanceUuid: arq.instanceUuid,
      attachHandle: handle
        ? { uuid: handle.uuid, type: handle.attach_type, info: handle.info }
        : null,
    }
    return arqEvent(action, facts, now, reason)
  })
  await insertEvents(db, events)
}

/** Writes one `action` event per request of `arqs`, in order (one INSERT). */
export function recordArqAction(
  db: Kysely<Database>,
  arqs: readonly Arq[],
  action: ArqAction,
  now: string,
  extra: Pick<ArqEventItem, 'reason' | 'profileName'> = {},
): Promise<void> {
  return recordArqEvents(
    db,
    arqs.map((arq) => ({ arq, action, ...extra })),
    now,
  )
}
