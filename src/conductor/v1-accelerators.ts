/**
 * The v1 API's writes, conductor side (api-v1-and-cli.md): attach an accelerator to an instance
 * or a host, detach it, and replace its spec.
 *
 * - An attach is an accelerator request with no device profile, made through the same handle
 *   claim (SKIP LOCKED, recorded in the claim's transaction) as a v2 bind, so v1 and v2 never
 *   hand out one device twice and each sees the other's holders. Attaches of one accelerator are
 *   serialised by its deployable's row lock; attaches to one instance also take the instance's
 *   bind lock, as v2 binds do.
 * - A device with attach handles is prepared by its host's agent (vfio-pci, mdev) before the
 *   attachment is Bound; a failure leaves nothing behind. A crash mid-attach leaves a BindStarted
 *   request that the reaper fails, freeing its handle.
 * - A detach deletes the accelerator's v1 attachments through the ARQ delete path (Deleting first,
 *   persisted) and never touches a v2 request; when only v2 requests (Nova's) hold it, it refuses.
 * - The spec is compare-and-set against `If-Match`, under the deployable's row lock.
 * - Events as for v2 requests (the attachment is one): `accelerator.arq.created` and `.bound` on
 *   attach, `.unbound` and `.deleted` on detach (through the delete path).
 */
import type { DatabaseHandle } from '../db/core/connection.js'
import type { GroupCommitter } from '../db/core/group-commit.js'
import { updateArqStates } from '../db/arqs.js'
import { recordArqAction, recordArqEvents } from '../db/outbox/arq-events.js'
import {
  listHolders,
  hasHandles,
  createAttachment,
  getAcceleratorForUpdate,
  updateAccSpecs,
  listV1Attachments,
} from '../db/v1-attachments.js'
import {
  accSpecsEtag,
  attachmentNotFound,
  ifMatchAccepts,
  parseAccSpecsBody,
  type AttachTarget,
} from '../domain/v1-accelerator.js'
import type { Arq } from '../domain/arq.js'
import type { AttachHandle } from '../domain/inventory/inventory.js'
import { ConflictError, InvalidInputError } from '../domain/errors.js'
import { canonicalJson } from '../domain/inventory/inventory.js'
import type { Logger } from '../domain/logger.js'
import { formatTimestamp, type Clock } from '../domain/time.js'
import type { ConductorRpc } from '../rpc/conductor-rpc.js'
import type { ArqInternals } from './arq/arq-internals.js'
import { checkUuid, checkUuidRequest, checkV1Detach } from './validate.js'
import type { V1Placement } from './v1-placement.js'
import { claimAttachHandle } from '../db/attach-handles.js'
import type { LimitSource } from '../domain/quota.js'
import { quotaGate } from './arq/quota-check.js'
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

type V1Methods = Pick<
  ConductorRpc,
  'attachAccelerator' | 'detachAccelerator' | 'setAcceleratorSpecs'
>

/** "instance X" or "host Y (v1)" for messages. */
const describe = (a: Arq) =>
  `${a.instanceUuid ? `instance ${a.instanceUuid}` : `host ${a.hostname ?? '?'}`} (${a.deviceProfileId === null ? 'v1 attachment' : 'accelerator request'} ${a.uuid}, ${a.state})`

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

export function createV1AcceleratorService(deps: V1Deps): V1Methods {
  const { db, committer, arqs } = deps
  const log = deps.log.child({ component: 'v1' })
  const now = () => formatTimestamp(deps.clock.now())

  /**
   * Undoes a failed attach through the delete path: the agent gives the device back (vfio-pci,
   * mdev), Placement the unit, then the record goes and the handle is freed. What cannot be given
   * back now stays Deleting, and the reaper finishes it.
   */
  const undo = async (arq: Arq) => {
    const removed = await arqs.remove([arq]).catch((err: unknown) => {
      log.warn(
        { err, attachment: arq.uuid },
        'could not undo a failed attach; the reaper finishes it',
      )
      return []
    })
    if (removed.length === 0)
      log.warn({ attachment: arq.uuid }, 'a failed attach is left Deleting; the reaper finishes it')
  }

  /** The steps outside the database: the agent prepares the device, Placement records the unit; then Bound. */
  const finish = async (
    uuid: string,
    arq: Arq,
    handle: AttachHandle | undefined,
    allocation: { rp: string; rc: string } | undefined,
  ) => {
    let step = 'the agent of ' + String(arq.hostname) + ' failed to prepare it'
    try {
      if (handle) await arqs.prepare(arq.hostname!, handle)
      step = 'Placement refused the allocation'
      if (allocation) await deps.placement!.allocate(arq.uuid, allocation.rp, allocation.rc)
    } catch (err) {
      await undo(arq)
      const reason = errorMessage(err)
      log.warn({ accelerator: uuid, reason }, 'attach failed')
      throw new ConflictError(`accelerator ${uuid} could not be attached: ${step}: ${reason}`, {
        code: 'ATTACH_FAILED',
        details: { uuid },
      })
    }
    const { count } = await committer.run(async (trx) => {
      const bound = await updateArqStates(trx, [arq.uuid], 'Bound', { now: now() })
      await recordArqAction(trx, bound.moved, 'bound', now())
      return bound
    })
    if (count === 0) {
      // A detach took it meanwhile, perhaps before the allocation was written: take that back too.
      await deps.placement
        ?.release(arq.uuid)
        .catch((err: unknown) =>
          log.warn(
            { err, attachment: arq.uuid },
            'could not take an allocation back from Placement',
          ),
        )
      throw new ConflictError(`accelerator ${uuid} was detached while it was being attached`, {
        code: 'ATTACH_FAILED',
        details: { uuid },
      })
    }
  }

  return {
    async attachAccelerator(req) {
      const { uuid } = checkUuidRequest(req)
      const target = checkTarget(req.target)
      const instance = 'instanceUuid' in target ? target.instanceUuid : null
      const attachment = newUuid() // made before the write, so that a re-run writes the same row
      const projectId = typeof req.projectId === 'string' ? req.projectId : null
      const quota = await quotaGate(deps.quota, [projectId])
      const claimed = await committer.run(async (trx) => {
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
        const ms = deps.serviceDownTimeMs
        const last = ms === undefined ? null : await getAgentLastSeen(trx, acc.hostname)
        if (ms !== undefined && last !== null && last < leaseCutoff(deps.clock, ms)) {
          const reason = silentAgentReason(acc.hostname, last)
          throw new ConflictError(`accelerator ${uuid} cannot be attached: ${reason}`, {
            code: 'AGENT_SILENT',
            details: { uuid, rule: 'lease', hostname: acc.hostname, lastSeen: last },
          })
        }
        // The rules of a bind (src/domain/explain.ts), past the group's: the 409 names the one that failed.
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
      })
      const { arq } = claimed
      if (claimed.again) return { uuid, attachment: arq.uuid, changed: false }
      if (claimed.handle || claimed.allocation)
        await finish(uuid, arq, claimed.handle, claimed.allocation)
      if (instance !== null)
        await arqs.notify([{ uuid: arq.uuid, state: 'Bound' }], {
          [arq.uuid]: { hostname: arq.hostname!, instanceUuid: instance },
        })
      log.info(
        { accelerator: uuid, instance, host: arq.hostname, attachment: arq.uuid },
        'accelerator attached (v1)',
      )
      return { uuid, attachment: arq.uuid, changed: true }
    },

    async detachAccelerator(req) {
      const { uuid, instanceUuid: instance, projectId } = checkV1Detach(req)
      // A non-admin's call sees and touches only its project's requests: another's are as absent.
      const seen = (a: Arq) => projectId === undefined || a.projectId === projectId
      const acc = await getAcceleratorForUpdate(db.db, db.dialect, uuid, false)
      const holders = (await listHolders(db.db, db.dialect, acc.id, false)).filter(seen)
      const foreign = holders.filter((h) => h.deviceProfileId !== null)
      const mine = (await listV1Attachments(db.db, acc.id)).filter(
        (a) => seen(a) && (instance === undefined || a.instanceUuid === instance),
      )
      if (
        instance !== undefined &&
        mine.length === 0 &&
        !foreign.some((h) => h.instanceUuid === instance)
      ) {
        throw attachmentNotFound(uuid, instance)
      }
      // v2's requests are never touched: with none of v1's to detach, what holds it is theirs.
      if (foreign.length > 0 && mine.length === 0) {
        throw new ConflictError(
          `accelerator ${uuid} is held by accelerator requests made outside v1: ${foreign.map(describe).join('; ')}; they must be unbound or deleted through v2 first`,
          { code: 'ACCELERATOR_HELD', details: { uuid, holders: foreign.map((h) => h.uuid) } },
        )
      }
      const deleted = await arqs.remove(mine)
      const left = mine.filter((a) => !deleted.includes(a.uuid))
      if (left.length > 0) {
        throw new ConflictError(
          `accelerator ${uuid} is not fully detached: ${left.map(describe).join('; ')} could not be released yet; try again`,
          {
            code: 'DETACH_INCOMPLETE',
            details: { uuid, attachments: left.map((a) => a.uuid) },
          },
        )
      }
      if (deleted.length > 0)
        log.info({ accelerator: uuid, detached: deleted }, 'accelerator detached (v1)')
      return { detached: deleted }
    },

    async setAcceleratorSpecs(req) {
      const { uuid } = checkUuidRequest(req)
      const specs = canonicalJson(parseAccSpecsBody({ acc_specs: req.accSpecs }))
      const ifMatch = req.ifMatch
      return committer.run(async (trx) => {
        const acc = await getAcceleratorForUpdate(trx, db.dialect, uuid)
        const current = accSpecsEtag(acc.accSpecs)
        if (typeof ifMatch === 'string' && !ifMatchAccepts(ifMatch, current)) {
          throw new ConflictError(
            `another process updated the spec of accelerator ${uuid} (its ETag is now ${current}, not ${ifMatch}); read it again and retry`,
            {
              code: 'ACC_SPECS_STALE',
              details: { field: 'If-Match', uuid, etag: current },
            },
          )
        }
        await updateAccSpecs(trx, acc.id, specs, now())
        return { etag: accSpecsEtag(specs) }
      })
    },
  }
}
