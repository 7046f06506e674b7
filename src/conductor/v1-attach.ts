/**
 * The v1 attach (v1-accelerators.ts wires it): an accelerator request with no device profile, made
 * through the same handle claim (SKIP LOCKED, recorded in the claim's transaction) as a v2 bind.
 *
 * `claimAttachment` is the one transaction: the accelerator's row lock, the instance's bind lock
 * and the quota locks; the same target again is a no-op; the agent's lease and the bind rules
 * (`checkAttachable`); the handle claimed and the attachment written with its events. Then
 * `finishAttach` has the agent prepare the device and Placement record the unit, and marks it
 * Bound; a failure undoes it through the delete path (`undoAttach`). Module functions over `V1Deps`.
 */
import type { DatabaseHandle } from '../db/core/connection.js'
import type { GroupCommitter, WriteTrx } from '../db/core/group-commit.js'
import { updateArqStates } from '../db/arqs.js'
import { recordArqAction, recordArqEvents } from '../db/outbox/arq-events.js'
import {
  listHolders,
  hasHandles,
  createAttachment,
  getAcceleratorForUpdate,
  type AttachableAccelerator,
} from '../db/v1-attachments.js'
import type { AttachTarget } from '../domain/v1-accelerator.js'
import type { Arq } from '../domain/arq.js'
import type { AttachHandle } from '../domain/inventory/inventory.js'
import { ConflictError, InvalidInputError } from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'
import type { Clock } from '../domain/time.js'
import type { ConductorRpc } from '../rpc/conductor-rpc.js'
import type { ArqInternals } from './arq/arq-internals.js'
import { checkUuid, checkUuidRequest } from './validate.js'
import type { V1Placement } from './v1-placement.js'
import { claimAttachHandle } from '../db/attach-handles.js'
import type { LimitSource } from '../domain/quota.js'
import { quotaGate, type QuotaGate } from './arq/quota-check.js'
import { claimInstanceLocks } from '../db/arq-instances.js'
import { errorMessage } from '../domain/error-message.js'
import { newUuid } from '../domain/ids.js'
import { leaseCutoff, silentAgentReason } from './lease-sweep.js'
import { judge } from '../domain/explain.js'
import { getAgentLastSeen } from '../db/service-rows.js'

export interface V1Deps {
  db: DatabaseHandle
  committer: Pick<GroupCommitter, 'run'>
  arqs: ArqInternals
  /** With `[placement]`: each attachment allocates one unit as its own consumer. */
  placement?: V1Placement
  log: Logger
  clock: Clock
  /** `[DEFAULT] service_down_time` in ms: an attach refuses a host whose agent is past it. @default no check */
  serviceDownTimeMs?: number | undefined
  /** `[quota] driver = unified_limits`: the limits attaches are held to (docs/quota.md). */
  quota?: LimitSource | undefined
}

/** What the flows use: the deps, with the service's logger and the time of a write. */
export type V1Context = V1Deps & { now: () => string }

type AttachRequest = Parameters<ConductorRpc['attachAccelerator']>[0]

/** "instance X" or "host Y (v1)" for messages. */
export const describe = (a: Arq) => {
  const holder = a.instanceUuid ? `instance ${a.instanceUuid}` : `host ${a.hostname ?? '?'}`
  const kind = a.deviceProfileId === null ? 'v1 attachment' : 'accelerator request'
  return `${holder} (${kind} ${a.uuid}, ${a.state})`
}

function checkTarget(value: unknown): AttachTarget {
  const t = value as Partial<Record<'instanceUuid' | 'hostname', unknown>> | null
  if (t && typeof t.instanceUuid === 'string')
    return { instanceUuid: checkUuid(t.instanceUuid, 'instance_uuid') }
  if (t && typeof t.hostname === 'string' && t.hostname !== '') return { hostname: t.hostname }
  throw new InvalidInputError(
    "Invalid input for field 'instance_uuid': give instance_uuid or hostname",
    { details: { field: 'instance_uuid' } },
  )
}

/**
 * The 409 of an attach to a full accelerator. With `project` (a non-admin caller's), it names only
 * that project's holders and counts the others: another project's instances are never shown.
 */
function inUse(uuid: string, holders: Arq[], project: string | null | undefined): ConflictError {
  const shown = project === undefined ? holders : holders.filter((h) => h.projectId === project)
  const others = holders.length - shown.length
  const named = [
    ...shown.map(describe),
    ...(others > 0 ? [`${others} held by other projects`] : []),
  ]
  return new ConflictError(
    `accelerator ${uuid} is already attached: ${named.join('; ') || 'every unit is in use'}`,
    { code: 'ACCELERATOR_IN_USE', details: { uuid, holders: shown.map((h) => h.uuid) } },
  )
}

/**
 * Refuses an accelerator whose host's agent is past its lease, or that the rules of a bind
 * (src/domain/explain.ts) refuse, past the group's: the 409 names the one that failed.
 */
export async function checkAttachable(
  deps: Pick<V1Deps, 'serviceDownTimeMs' | 'clock'>,
  trx: WriteTrx,
  uuid: string,
  acc: AttachableAccelerator,
): Promise<void> {
  const ms = deps.serviceDownTimeMs
  const last = ms === undefined ? null : await getAgentLastSeen(trx, acc.hostname)
  if (ms !== undefined && last !== null && last < leaseCutoff(deps.clock, ms)) {
    const reason = silentAgentReason(acc.hostname, last)
    throw new ConflictError(`accelerator ${uuid} cannot be attached: ${reason}`, {
      code: 'AGENT_SILENT',
      details: { uuid, rule: 'lease', hostname: acc.hostname, lastSeen: last },
    })
  }
  const { rule, reason } = judge({ ...acc, attributes: [], agentLastSeen: last }, undefined)
  if (rule !== 'fits') {
    const fenced = rule === 'health' || rule === 'lease'
    throw new ConflictError(`accelerator ${uuid} cannot be attached: ${reason}`, {
      code: fenced ? 'ACCELERATOR_FENCED' : 'ACCELERATOR_NOT_ACTIVE',
      details: {
        uuid,
        rule,
        lifecycle: acc.lifecycle,
        status: acc.status,
        health: acc.health,
        reason: acc.healthReason,
      },
    })
  }
}

/** The attach's transaction: the attachment made (or found again), with what is left to do outside it. */
export async function claimAttachment(
  deps: V1Context,
  trx: WriteTrx,
  req: AttachRequest,
  want: { target: AttachTarget; attachment: string; projectId: string | null },
  quota: QuotaGate | undefined,
) {
  const { db, now } = deps
  const { uuid } = req
  const { target, attachment, projectId } = want
  const instance = 'instanceUuid' in target ? target.instanceUuid : null
  const acc = await getAcceleratorForUpdate(trx, db.dialect, uuid)
  if (instance !== null) await claimInstanceLocks(trx, db.dialect, [instance], now())
  await quota?.lock(trx, now()) // after the instance's lock, as a bind takes them
  const holders = await listHolders(trx, db.dialect, acc.id)
  const hostname = 'hostname' in target ? target.hostname : acc.hostname
  const same = holders.find(
    (h) =>
      h.deviceProfileId === null &&
      h.projectId === projectId &&
      h.instanceUuid === instance &&
      h.hostname === hostname &&
      h.state !== 'Deleting',
  )
  if (same) return { arq: same, handle: undefined, again: true }
  await checkAttachable(deps, trx, uuid, acc)
  const handles = await hasHandles(trx, acc.id)
  if (handles && hostname !== acc.hostname) {
    throw new InvalidInputError(
      `Invalid input for field 'hostname': accelerator ${uuid} is a device of host ${acc.hostname} and attaches only there`,
      {
        details: { field: 'hostname' },
      },
    )
  }
  const handle = handles ? await claimAttachHandle(trx, acc.id, { now: now() }) : undefined
  if ((handles && !handle) || (!handles && holders.length >= acc.numAccelerators))
    throw inUse(uuid, holders, req.seesAllProjects === true ? undefined : projectId)
  const needsAgent = handle !== undefined && handle.type !== 'TEST_PCI'
  const allocation =
    deps.placement && acc.rpUuid && acc.rc ? { rp: acc.rpUuid, rc: acc.rc } : undefined
  const input = {
    uuid: attachment,
    deployableId: acc.id,
    rpUuid: acc.rpUuid,
    hostname,
    instanceUuid: instance,
    attachHandleId: handle?.id ?? null,
    projectId,
  }
  const arq = await createAttachment(
    trx,
    { ...input, state: needsAgent || allocation ? 'BindStarted' : 'Bound' },
    now(),
  )
  if (projectId && acc.rc) await quota?.enforce(trx, [{ projectId, resourceClass: acc.rc }])
  const bound = arq.state === 'Bound' ? [{ arq, action: 'bound' as const }] : []
  await recordArqEvents(trx, [{ arq, action: 'created' }, ...bound], now())
  return { arq, handle: needsAgent ? handle : undefined, allocation, again: false }
}

/**
 * Undoes a failed attach through the delete path: the agent gives the device back (vfio-pci,
 * mdev), Placement the unit, then the record goes and the handle is freed. What cannot be given
 * back now stays Deleting, and the reaper finishes it.
 */
export async function undoAttach(deps: Pick<V1Deps, 'arqs' | 'log'>, arq: Arq): Promise<void> {
  const removed = await deps.arqs.remove([arq]).catch((err: unknown) => {
    deps.log.warn(
      { err, attachment: arq.uuid },
      'could not undo a failed attach; the reaper finishes it',
    )
    return []
  })
  if (removed.length === 0)
    deps.log.warn(
      { attachment: arq.uuid },
      'a failed attach is left Deleting; the reaper finishes it',
    )
}

/** The steps outside the database: the agent prepares the device, Placement records the unit; then Bound. */
export async function finishAttach(
  deps: V1Context,
  uuid: string,
  arq: Arq,
  handle: AttachHandle | undefined,
  allocation: { rp: string; rc: string } | undefined,
): Promise<void> {
  const { log, now } = deps
  let step = 'the agent of ' + String(arq.hostname) + ' failed to prepare it'
  try {
    if (handle) await deps.arqs.prepare(arq.hostname!, handle)
    step = 'Placement refused the allocation'
    if (allocation) await deps.placement!.allocate(arq.uuid, allocation.rp, allocation.rc)
  } catch (err) {
    await undoAttach(deps, arq)
    const reason = errorMessage(err)
    log.warn({ accelerator: uuid, reason }, 'attach failed')
    throw new ConflictError(`accelerator ${uuid} could not be attached: ${step}: ${reason}`, {
      code: 'ATTACH_FAILED',
      details: { uuid },
    })
  }
  const { count } = await deps.committer.run(async (trx) => {
    const bound = await updateArqStates(trx, [arq.uuid], 'Bound', { now: now() })
    await recordArqAction(trx, bound.moved, 'bound', now())
    return bound
  })
  if (count === 0) {
    // A detach took it meanwhile, perhaps before the allocation was written: take that back too.
    await deps.placement
      ?.release(arq.uuid)
      .catch((err: unknown) =>
        log.warn({ err, attachment: arq.uuid }, 'could not take an allocation back from Placement'),
      )
    throw new ConflictError(`accelerator ${uuid} was detached while it was being attached`, {
      code: 'ATTACH_FAILED',
      details: { uuid },
    })
  }
}

/** `attachAccelerator` (ConductorRpc 1.4): the claim's transaction, the steps outside it, then Nova. */
export async function attachAccelerator(
  deps: V1Context,
  req: AttachRequest,
): Promise<{ uuid: string; attachment: string; changed: boolean }> {
  const { uuid } = checkUuidRequest(req)
  const target = checkTarget(req.target)
  const instance = 'instanceUuid' in target ? target.instanceUuid : null
  const attachment = newUuid() // made before the write, so that a re-run writes the same row
  const projectId = typeof req.projectId === 'string' ? req.projectId : null
  const quota = await quotaGate(deps.quota, [projectId])
  const claimed = await deps.committer.run((trx) =>
    claimAttachment(deps, trx, { ...req, uuid }, { target, attachment, projectId }, quota),
  )
  const { arq } = claimed
  if (claimed.again) return { uuid, attachment: arq.uuid, changed: false }
  if (claimed.handle || claimed.allocation)
    await finishAttach(deps, uuid, arq, claimed.handle, claimed.allocation)
  if (instance !== null)
    await deps.arqs.notify([{ uuid: arq.uuid, state: 'Bound' }], {
      [arq.uuid]: { hostname: arq.hostname!, instanceUuid: instance },
    })
  deps.log.info(
    { accelerator: uuid, instance, host: arq.hostname, attachment: arq.uuid },
    'accelerator attached (v1)',
  )
  return { uuid, attachment: arq.uuid, changed: true }
}
