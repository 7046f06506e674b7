/**
 * How accelerator requests let go of what they hold: unbind (→ Unbound, or UnbindFailed when the
 * agent cannot give the device back), delete (Deleting first, persisted, then released and the rows
 * removed), the reaper's finish of requests left Deleting, and the standalone Placement reconcile.
 *
 * Release order: outside the database first (the agent unbinds vfio-pci or removes the mdev; a v1
 * attachment's Placement consumer or, standalone, the instance's allocation is taken back), then
 * the rows, in one transaction: a handle is freed only once no request names it. Each change writes
 * its event in its transaction: `accelerator.arq.unbound`, `.unbind_failed`, `.deleted` (a Bound
 * request deleted without an unbind gets `.unbound` first).
 * Module functions over `ReleaseDeps`, so that each step can be tested alone.
 */
import type { DatabaseHandle } from '../../db/core/connection.js'
import type { GroupCommitter, WriteTrx } from '../../db/core/group-commit.js'
import {
  deleteArqs,
  getArq,
  getArqForUpdate,
  listStaleDeletes,
  updateArqStates,
} from '../../db/arqs.js'
import { deleteLockedArqs } from '../../db/arq-locked.js'
import { getAttachHandle, releaseAttachHandle } from '../../db/attach-handles.js'
import { getHeldCountsByInstance, getTargetById } from '../../db/arq-targets.js'
import type { Arq } from '../../domain/arq.js'
import { mdevUuidOf, type AttachHandle } from '../../domain/inventory/inventory.js'
import { ConflictError } from '../../domain/errors.js'
import { errorMessage } from '../../domain/error-message.js'
import type { Logger } from '../../domain/logger.js'
import type { AgentRpc } from '../../rpc/agent-rpc.js'
import type { ArqBindOutcome } from '../../rpc/conductor-rpc.js'
import type { ArqAllocator } from './arq-allocations.js'
import { rcOf } from './arq-claim.js'
import { pciAddress } from './arq-program.js'
import { recordArqAction, recordArqEvents, type ArqEventItem } from '../../db/outbox/arq-events.js'
import type { V1Placement } from '../v1-placement.js'
import { appendAllocationRecords } from '../../db/custody.js'
import { AllocatedVia } from '../../domain/custody/custody.js'
import { CYBORG_NAMESPACE, newUuid, uuidV5 } from '../../domain/ids.js'
import { writeKeyedMarkers } from '../../db/core/commit-markers.js'
import type { ProfileCache } from './profile-cache.js'

export interface ReleaseDeps {
  db: DatabaseHandle
  committer: Pick<GroupCommitter, 'run'>
  /** The agent of a host; without it nothing is prepared, so nothing needs giving back. */
  agentFor?: ((host: string) => Pick<AgentRpc, 'release' | 'removeMdev'>) | undefined
  /** Standalone with Placement (no Nova): the allocations the conductor wrote for bound requests. */
  allocator?: ArqAllocator | undefined
  /** v1 attachments' own Placement consumers. */
  v1Placement?: Pick<V1Placement, 'release'> | undefined
  log: Logger
  now: () => string
  /** How v2 requests were bound, for the custody ledger (docs/custody.md). @default 'standalone_v2' */
  allocatedVia?: typeof AllocatedVia.NovaV2 | typeof AllocatedVia.StandaloneV2 | undefined
  /** Custody record uuids. @default newUuid */
  uuid?: (() => string) | undefined
  /**
   * Clean before reuse (docs/cleaning.md): with it, a released handle goes to `cleaning` instead of
   * back in service, and `cleanReleased` is told the handles once their release has committed.
   * Without it (a conductor that reaches no agents) handles go straight back.
   */
  cleaner?: { cleanReleased(handleIds: readonly number[]): void } | undefined
  /** Profiles already read by this conductor, for the events' names (profile-cache.ts). */
  profiles?: ProfileCache | undefined
}

/**
 * Appends the custody ledger's allocation records of requests that let go of a handle they held
 * once Bound (one statement, in the release's transaction). `arqs` carry the state they were in
 * before the release (Bound, UnbindFailed or Deleting) and `boundAt`, the time their bind committed
 * (migration 0016; null for one bound before it and released since); a request that never got
 * Bound (BindStarted, BindFailed) held nothing for a tenant.
 */
async function closeIntervals(
  deps: ReleaseDeps,
  trx: WriteTrx,
  arqs: readonly Arq[],
): Promise<Map<string, string>> {
  const { now, uuid = newUuid } = deps
  const v2Via = deps.allocatedVia ?? AllocatedVia.StandaloneV2
  const at = now()
  const intervals = arqs
    .filter(
      (a) =>
        a.attachHandleId !== null &&
        (a.state === 'Bound' || a.state === 'UnbindFailed' || a.state === 'Deleting'),
    )
    .map((arq) => ({
      uuid: uuid(),
      arq,
      via: arq.deviceProfileId === null ? AllocatedVia.V1Attach : v2Via,
      boundAt: arq.boundAt,
      releasedAt: at,
    }))
  await appendAllocationRecords(trx, intervals)
  return new Map(intervals.map((i) => [i.arq.uuid, i.uuid]))
}

/**
 * Lets go of the handles of `arqs` (rows already gone or moved): one whose request closed an
 * allocation interval (`records`: request uuid → interval record) goes to `cleaning` when the
 * conductor cleans, else back in service. Resolves with the handles that went to cleaning.
 */
async function releaseHandles(
  deps: ReleaseDeps,
  trx: WriteTrx,
  arqs: readonly Arq[],
  records: ReadonlyMap<string, string>,
): Promise<number[]> {
  const cleaning: number[] = []
  for (const arq of arqs) {
    if (arq.attachHandleId === null) continue
    // Only an interval (a request that was Bound) had a tenant: a failed bind's unit goes straight back.
    const interval = records.get(arq.uuid)
    const clean = deps.cleaner && interval !== undefined && { allocationUuid: interval }
    const released = await releaseAttachHandle(trx, arq.attachHandleId, {
      now: deps.now(),
      ...(clean ? { clean } : {}),
    })
    if (released && clean) cleaning.push(arq.attachHandleId)
  }
  return cleaning
}

/**
 * Has the agent give the device back (vfio-pci, mdev) and, for a Bound request in standalone mode
 * with Placement, takes its allocation back. Resolves with a failure reason, or undefined.
 */
export async function releaseDevice(deps: ReleaseDeps, arq: Arq): Promise<string | undefined> {
  const { db, agentFor, allocator, v1Placement, log } = deps
  if (arq.attachHandleId !== null && arq.hostname !== null) {
    const handle = await getAttachHandle(db.db, arq.attachHandleId)
    try {
      if (handle && handle.type !== 'TEST_PCI' && agentFor) {
        const agent = agentFor(arq.hostname)
        if (handle.type === 'PCI') await agent.release({ address: pciAddress(handle.info) })
        if (handle.type === 'MDEV') await agent.removeMdev({ uuid: mdevUuidOf(handle) })
      }
    } catch (err) {
      return errorMessage(err)
    }
  }
  if (arq.deviceProfileId === null) {
    // A v1 attachment is its own consumer; failing here keeps it Deleting, for a retry.
    return v1Placement?.release(arq.uuid).then(
      () => undefined,
      (err: unknown) => `Placement: ${errorMessage(err)}`,
    )
  }
  if (
    allocator &&
    arq.state === 'Bound' &&
    arq.deployableId !== null &&
    arq.instanceUuid !== null
  ) {
    const target = await getTargetById(db.db, arq.deployableId)
    const rc = target && rcOf(target)
    if (target?.rpUuid && rc) {
      await allocator
        .release(arq.instanceUuid, target.rpUuid, rc)
        .catch((err: unknown) =>
          log.warn({ err, arq: arq.uuid }, 'could not take the allocation back from Placement'),
        )
    }
  }
  return undefined
}

/**
 * Has `arq` nothing for `releaseDevice` to give back: no agent-prepared device, no Placement
 * allocation? A handle it reads goes into `seen` (by id), for the events of the same transaction.
 */
export async function holdsNothingOutside(
  deps: ReleaseDeps,
  trx: WriteTrx,
  arq: Arq,
  seen?: Map<number, AttachHandle>,
): Promise<boolean> {
  const { agentFor, allocator, v1Placement } = deps
  if (
    arq.deviceProfileId === null
      ? v1Placement
      : allocator && arq.deployableId !== null && arq.instanceUuid !== null
  )
    return false
  if (arq.attachHandleId === null || arq.hostname === null || !agentFor) return true
  const handle = await getAttachHandle(trx, arq.attachHandleId)
  if (handle) seen?.set(handle.id, handle)
  return !handle || handle.type === 'TEST_PCI'
}

/** Frees what an ARQ holds and moves it to Unbound with its binding cleared (UnbindFailed if the agent failed). */
export async function unbindOne(deps: ReleaseDeps, arq: Arq, attempt = 1): Promise<ArqBindOutcome> {
  const { db, committer, log, now } = deps
  const reason = await releaseDevice(deps, arq)
  if (reason !== undefined) {
    await committer.run(async (trx) => {
      const { moved } = await updateArqStates(trx, [arq.uuid], 'UnbindFailed', { now: now() })
      await recordArqAction(trx, moved, 'unbind_failed', now(), { reason })
    })
    log.warn({ arq: arq.uuid, reason }, 'unbind failed; the handle stays held')
    return { uuid: arq.uuid, state: 'UnbindFailed', reason }
  }
  const clear = {
    hostname: null,
    deviceRpUuid: null,
    instanceUuid: null,
    attachHandleId: null,
    deployableId: null,
  }
  const changed = await committer.run(async (trx) => {
    // A bind may have claimed a handle since `arq` was read: then release that one instead.
    const current = await getArqForUpdate(trx, arq.uuid)
    if (current.attachHandleId !== arq.attachHandleId) return true
    const { moved } = await updateArqStates(trx, [arq.uuid], 'Unbound', { now: now(), set: clear })
    // The event names what was let go: the binding as it was, in the state now saved.
    const unbound = moved.map((m) => ({ ...current, state: m.state, updatedAt: m.updatedAt }))
    await recordArqAction(trx, unbound, 'unbound', now())
    const records = moved.length > 0 ? await closeIntervals(deps, trx, [current]) : new Map()
    return releaseHandles(deps, trx, [arq], records)
  })
  if (changed === true) {
    if (attempt >= 3)
      throw new ConflictError(
        `accelerator request ${arq.uuid} kept changing while unbinding; try again`,
        { code: 'ARQ_BAD_STATE' },
      )
    return unbindOne(deps, await getArq(db.db, arq.uuid), attempt + 1)
  }
  if (changed.length > 0) deps.cleaner?.cleanReleased(changed)
  return { uuid: arq.uuid, state: 'Unbound' }
}

/**
 * The events of deleted requests (`deleted` holds the rows as they were): `unbound` first for one
 * that was Bound before it was deleted (per `before`, the requests with their prior states), then
 * `deleted`. `handles`: the handles already read in this transaction (the events need not again).
 */
async function deletionEvents(
  deps: ReleaseDeps,
  trx: WriteTrx,
  deleted: readonly Arq[],
  before: readonly Arq[],
  handles?: ReadonlyMap<number, AttachHandle>,
): Promise<ArqEventItem[]> {
  const bound = new Set(before.filter((a) => a.state === 'Bound').map((a) => a.uuid))
  const ids = deleted.flatMap((a) => (a.deviceProfileId === null ? [] : [a.deviceProfileId]))
  const known = deps.profiles && ids.length > 0 ? await deps.profiles.byIds(trx, ids) : []
  const names = new Map(known.map((p) => [p.id, p.name]))
  return deleted.flatMap((arq) => {
    const h = arq.attachHandleId === null ? undefined : handles?.get(arq.attachHandleId)
    const handle = h && { id: h.id, uuid: h.uuid, type: h.type, info: h.info }
    const named = arq.deviceProfileId === null ? undefined : names.get(arq.deviceProfileId)
    const profileName = named === undefined ? {} : { profileName: named }
    return [
      ...(bound.has(arq.uuid) ? [{ arq, action: 'unbound' as const, handle, ...profileName }] : []),
      { arq, action: 'deleted' as const, handle, ...profileName },
    ]
  })
}

/**
 * The keyed commit marker saying that the delete `key` (ConductorRpc 1.10 `deleteId`) deleted the
 * request `arq` (docs/arqs.md, "Redelivered deletes").
 */
export const deletedMarker = (key: string, arq: string): string =>
  uuidV5(JSON.stringify(['arq-deleted', key, arq]), CYBORG_NAMESPACE)

/** Writes, in the transaction that deleted them, the markers of `gone` under `key` (none without one). */
async function markDeleted(trx: WriteTrx, key: string | undefined, gone: Arq[], now: string) {
  if (key === undefined || gone.length === 0) return
  await writeKeyedMarkers(
    trx,
    gone.map((a) => deletedMarker(key, a.uuid)),
    now,
  )
}

/**
 * Releases what Deleting requests hold, then frees their handles and deletes the rows, in one
 * transaction. One whose device the agent could not release stays Deleting (retried by the reaper).
 * `key`: the delete's (its markers are written with the rows' deletion).
 */
export async function finishDeleting(deps: ReleaseDeps, arqs: Arq[], key?: string): Promise<Arq[]> {
  const { committer, log, now } = deps
  const ready: Arq[] = []
  for (const arq of arqs) {
    const reason = await releaseDevice(deps, arq)
    if (reason === undefined) ready.push(arq)
    else
      log.warn(
        { arq: arq.uuid, reason },
        'could not release the device; the request stays Deleting',
      )
  }
  if (ready.length === 0) return []
  const { deleted, cleaning } = await committer.run(async (trx) => {
    // Rows first: a handle is freed only once no request names it.
    const deleted = await deleteArqs(trx, { uuids: ready.map((a) => a.uuid) })
    await recordArqEvents(trx, await deletionEvents(deps, trx, deleted, ready), now())
    await markDeleted(trx, key, deleted, now())
    const gone = new Set(deleted.map((a) => a.uuid))
    const records = await closeIntervals(
      deps,
      trx,
      ready.filter((a) => gone.has(a.uuid)),
    )
    return { deleted, cleaning: await releaseHandles(deps, trx, ready, records) }
  })
  if (cleaning.length > 0) deps.cleaner?.cleanReleased(cleaning)
  return deleted
}

/**
 * Unbinds and deletes requests: first Deleting, persisted (a crash from here on leaves requests
 * the reaper finishes); an UnbindFailed one stays as it is, it must be unbound first. One that
 * holds nothing outside the database goes in that same transaction. Resolves with the uuids deleted.
 * `key`: the caller's delete key; each transaction that deletes rows marks them deleted under it.
 */
export async function removeArqs(deps: ReleaseDeps, found: Arq[], key?: string): Promise<string[]> {
  const { committer, now } = deps
  const prior = new Map(found.map((a) => [a.uuid, a.state]))
  const marked = await committer.run(async (trx) => {
    const { moved } = await updateArqStates(
      trx,
      found.map((a) => a.uuid),
      'Deleting',
      { now: now() },
    )
    // What each holds as of this transaction (a bind may have claimed a handle since `found`
    // was read), with the state it was in before: that says whether Placement holds a unit.
    const current = moved.map((a) => ({ ...a, state: prior.get(a.uuid)! }))
    const quick: Arq[] = []
    const rest: Arq[] = []
    const handles = new Map<number, AttachHandle>()
    for (const arq of current)
      ((await holdsNothingOutside(deps, trx, arq, handles)) ? quick : rest).push(arq)
    // Locked by the move to Deleting: deleted as saved there, with nothing read back (issue 28).
    const quickUuids = new Set(quick.map((a) => a.uuid))
    const gone = await deleteLockedArqs(
      trx,
      moved.filter((a) => quickUuids.has(a.uuid)),
    )
    await recordArqEvents(trx, await deletionEvents(deps, trx, gone, quick, handles), now())
    await markDeleted(trx, key, gone, now())
    const goneUuids = new Set(gone.map((a) => a.uuid))
    const records = await closeIntervals(
      deps,
      trx,
      quick.filter((a) => goneUuids.has(a.uuid)),
    )
    return { gone, rest, cleaning: await releaseHandles(deps, trx, quick, records) }
  })
  if (marked.cleaning.length > 0) deps.cleaner?.cleanReleased(marked.cleaning)
  return [...marked.gone, ...(await finishDeleting(deps, marked.rest, key))].map((a) => a.uuid)
}

/** Standalone with Placement: takes back allocations of `instances` that no request holds (after a crash). */
export async function reconcileAllocations(
  deps: ReleaseDeps,
  instances: Iterable<string>,
): Promise<void> {
  const { db, allocator, log } = deps
  if (!allocator) return
  for (const instance of new Set(instances)) {
    await allocator
      .trim(instance, (rps) => getHeldCountsByInstance(db.db, instance, rps))
      .catch((err: unknown) =>
        log.warn({ err, instance }, "could not check the instance's allocations in Placement"),
      )
  }
}

/** Finishes requests left Deleting since before `cutoff` (the reaper); resolves with their uuids. */
export async function finishStaleDeletes(deps: ReleaseDeps, cutoff: string): Promise<string[]> {
  const finished = await finishDeleting(deps, await listStaleDeletes(deps.db.db, cutoff))
  await reconcileAllocations(
    deps,
    finished.flatMap((a) => (a.instanceUuid ? [a.instanceUuid] : [])),
  )
  return finished.map((a) => a.uuid)
}
