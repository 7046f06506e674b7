/**
 * Moves accelerator requests left in BindStarted past `[DEFAULT] bind_timeout` to BindFailed: a
 * conductor died mid-bind, or an agent never answered. Their handles are freed in the same
 * transaction with their `accelerator.arq.bind_failed` events, and Nova hears "failed". Any conductor may run it: the state change is conditional,
 * so two reapers (or a late binder) never both act on one request.
 */
import type { DatabaseHandle } from '../../db/core/connection.js'
import type { GroupCommitter } from '../../db/core/group-commit.js'
import { updateArqStates } from '../../db/arqs.js'
import type { Logger } from '../../domain/logger.js'
import { formatTimestamp, type Clock } from '../../domain/time.js'
import type { NovaClient } from '../../openstack/nova.js'
import { releaseAttachHandle } from '../../db/attach-handles.js'
import { listStaleBinds } from '../../db/arqs.js'
import { recordArqAction } from '../../db/outbox/arq-events.js'
import { deleteStaleInstanceLocks } from '../../db/arq-instances.js'
import type { V1Placement } from '../v1-placement.js'

export interface ReaperDeps {
  db: DatabaseHandle
  committer: Pick<GroupCommitter, 'run'>
  nova?: NovaClient
  log: Logger
  clock: Clock
  /** `[DEFAULT] bind_timeout` in milliseconds. */
  bindTimeoutMs: number
  /** Takes back Placement allocations of these instances that no request holds any more (standalone with Placement). */
  reconcile?: (instances: string[]) => Promise<void>
  /** Takes back the Placement allocations of v1 attachments it failed (each is its own consumer). */
  releaseAttachments?: (uuids: string[]) => Promise<void>
}

/** One pass; resolves with the uuids it moved to BindFailed. */
export async function reapStaleBinds(deps: ReaperDeps): Promise<string[]> {
  const nowMs = deps.clock.now().getTime()
  const cutoff = formatTimestamp(new Date(nowMs - deps.bindTimeoutMs))
  const stale = await listStaleBinds(deps.db.db, cutoff)
  if (stale.length === 0) return []
  const moved = await deps.committer.run(async (trx) => {
    const now = formatTimestamp(new Date(nowMs))
    const set = { attachHandleId: null, deployableId: null }
    const result = await updateArqStates(
      trx,
      stale.map((s) => s.uuid),
      'BindFailed',
      { now, set },
    )
    const reason = `not bound within bind_timeout (${deps.bindTimeoutMs / 1000} s)`
    await recordArqAction(trx, result.moved, 'bind_failed', now, { reason })
    const movedUuids = new Set(result.moved.map((a) => a.uuid))
    for (const s of stale)
      if (movedUuids.has(s.uuid) && s.attachHandleId !== null)
        await releaseAttachHandle(trx, s.attachHandleId, { now })
    return stale.filter((s) => movedUuids.has(s.uuid))
  })
  if (moved.length === 0) return []
  deps.log.warn(
    { arqs: moved.map((m) => m.uuid) },
    `accelerator requests stuck binding for over ${deps.bindTimeoutMs / 1000} s: BindFailed`,
  )
  const instances = moved.flatMap((m) => (m.instanceUuid ? [m.instanceUuid] : []))
  await deps.reconcile?.(instances)
  const attachments = moved.filter((m) => m.deviceProfileId === null).map((m) => m.uuid)
  if (attachments.length > 0)
    await deps
      .releaseAttachments?.(attachments)
      .catch((err: unknown) =>
        deps.log.warn({ err }, 'could not take failed v1 attachments back from Placement'),
      )
  const events = moved.flatMap((m) =>
    m.instanceUuid
      ? [{ instanceUuid: m.instanceUuid, arqUuid: m.uuid, status: 'failed' as const }]
      : [],
  )
  if (deps.nova && events.length > 0) {
    await deps.nova
      .sendArqBoundEvents(events)
      .catch((err: unknown) => deps.log.error({ err }, 'could not tell Nova about timed-out binds'))
  }
  return moved.map((m) => m.uuid)
}

export interface ReaperLoopDeps extends Omit<ReaperDeps, 'releaseAttachments'> {
  /** v1 attachments' own Placement consumers: those of the attachments it failed are taken back. */
  v1Placement?: Pick<V1Placement, 'release'> | undefined
  /** Finishes requests left Deleting since before `cutoff` (arq-release.ts); resolves with their uuids. */
  finishStaleDeletes(cutoff: string): Promise<string[]>
}

/**
 * One pass of the conductor's reaper: fails stale binds, finishes stale deletes, and drops the
 * instances' bind locks older than `bind_timeout`. A failure is logged; the next pass retries.
 */
export async function reapPass(deps: ReaperLoopDeps): Promise<void> {
  const { v1Placement, finishStaleDeletes, ...reaper } = deps
  const { committer, log, clock, bindTimeoutMs } = deps
  try {
    const releaseAttachments =
      v1Placement &&
      (async (uuids: string[]) => void (await Promise.all(uuids.map(v1Placement.release))))
    await reapStaleBinds({ ...reaper, releaseAttachments })
    const finished = await finishStaleDeletes(
      formatTimestamp(new Date(clock.now().getTime() - bindTimeoutMs)),
    )
    if (finished.length > 0)
      log.warn({ arqs: finished }, 'finished deleting accelerator requests left Deleting')
    const cutoff = formatTimestamp(new Date(clock.now().getTime() - bindTimeoutMs))
    await committer.run((trx) => deleteStaleInstanceLocks(trx, cutoff))
  } catch (err) {
    log.warn({ err }, 'stale-bind reaper failed; next pass retries')
  }
}

/** Runs `reapPass` every `intervalMs` (never for 0); returns the stop function. */
export function startReaper(deps: ReaperLoopDeps, intervalMs: number): () => void {
  if (intervalMs <= 0) return () => {}
  const timer = setInterval(() => void reapPass(deps), intervalMs)
  timer.unref()
  return () => clearInterval(timer)
}
