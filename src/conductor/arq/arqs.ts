/**
 * Accelerator requests, conductor side (cyborg-v2-facts §2.3, with its gaps fixed): create from a
 * device profile and bind (Initial|Unbound → BindStarted → Bound | BindFailed) here; unbind and
 * delete, which release what a request holds, in arq-release.ts.
 *
 * - Every state change is a conditional UPDATE checked against the one transition table.
 * - A handle is claimed with `claimAttachHandle` (SKIP LOCKED, arq-claim.ts) and recorded on the ARQ in the same
 *   transaction, so two binders never share a handle and a crash never leaks one.
 * - The device is prepared by the agent of its host (vfio-pci for PCI, an mdev for MDEV) before
 *   the ARQ is Bound; a failure is BindFailed and frees the handle.
 * - When Nova is configured, the ARQs of one bind are announced in one event batch.
 * - Each change writes its event (`accelerator.arq.created`, `.bound`, `.bind_failed`) in its own
 *   transaction (src/db/outbox/arq-events.ts).
 */
import type { DatabaseHandle } from '../../db/core/connection.js'
import type { GroupCommitter } from '../../db/core/group-commit.js'
import { createArqs, listArqs, listBoundArqsOfInstance, updateArqStates } from '../../db/arqs.js'
import { releaseAttachHandle } from '../../db/attach-handles.js'
import { claimInstanceLocks } from '../../db/arq-instances.js'
import {
  getDeviceProfileByName,
  listDeviceProfilesById,
} from '../../db/reads/device-profile-reads.js'
import { allowedFrom, expandProfileGroups, type Arq, type ArqSpec } from '../../domain/arq.js'
import { ConflictError, NotFoundError } from '../../domain/errors.js'
import { errorMessage } from '../../domain/error-message.js'
import { newUuid } from '../../domain/ids.js'
import type { Logger } from '../../domain/logger.js'
import { formatTimestamp, type Clock } from '../../domain/time.js'
import type { NovaClient } from '../../openstack/nova.js'
import type { PlacementClient } from '../../openstack/placement.js'
import { createArqAllocator } from './arq-allocations.js'
import { recordArqAction, recordArqEvents, type ArqEventItem } from '../../db/outbox/arq-events.js'
import type { ArqAction } from '../../domain/events.js'
import { leaseCutoff } from '../lease-sweep.js'
import {
  finishStaleDeletes,
  reconcileAllocations,
  removeArqs,
  unbindOne,
  type ReleaseDeps,
} from './arq-release.js'
import { createFpgaProgrammer, pciAddress } from './arq-program.js'
import type { V1Placement } from '../v1-placement.js'
import { needsMore, claimHandleForArq, rcOf, type Placed } from './arq-claim.js'
import type { AgentRpc } from '../../rpc/agent-rpc.js'
import type { ArqBindOutcome, ArqBindRequest, ConductorRpc } from '../../rpc/conductor-rpc.js'
import { v2Arq, type ArqInternals } from './arq-internals.js'
import type { LimitSource } from '../../domain/quota.js'
import { bindClaims, bindQuota, type QuotaClaim } from './quota-check.js'
import {
  checkArqBindings,
  checkArqCreate,
  checkArqsOfInstance,
  checkUuidList,
} from '../validate.js'

/** The filter of a delete by instance: only the instance and, when given, the project. */
const ofInstance = ({ instanceUuid, projectId }: { instanceUuid: string; projectId?: string }) =>
  projectId === undefined ? { instanceUuid } : { instanceUuid, projectId }

export interface ArqDeps {
  db: DatabaseHandle
  committer: Pick<GroupCommitter, 'run'>
  /** The agent of a host; without it only handles that need no preparation (TEST_PCI) bind. */
  agentFor?: (
    host: string,
  ) => Pick<AgentRpc, 'prepare' | 'release' | 'createMdev' | 'removeMdev' | 'programFpgaImage'>
  nova?: NovaClient
  /** With Placement and without Nova, bound accelerators are allocated in Placement by the conductor. */
  placement?: PlacementClient
  /** v1 attachments' own Placement consumers (v1-placement.ts), taken back when one is deleted. */
  v1Placement?: Pick<V1Placement, 'release'>
  log: Logger
  clock: Clock
  /** `[DEFAULT] service_down_time` in ms: a bind refuses a host whose agent is past it. @default no check */
  serviceDownTimeMs?: number | undefined
  /** `[quota] driver = unified_limits`: the limits standalone binds are held to (docs/quota.md). */
  quota?: LimitSource | undefined
  /** Clean before reuse (unit-cleaning.ts): released units go to cleaning. @default none: straight back */
  cleaner?: ReleaseDeps['cleaner']
}

/** One ARQ after the bind's transaction: finished there (`done`), or placed with steps left. */
interface BindStep {
  arq: Arq
  spec?: ArqSpec | undefined
  placed?: Placed
  done?: ArqBindOutcome
}

type ArqMethods = Pick<ConductorRpc, 'createArqs' | 'bindArqs' | 'unbindArqs' | 'deleteArqs'> & {
  /** Finishes requests left Deleting since before `cutoff`; resolves with their uuids. The reaper calls it. */
  finishStaleDeletes(cutoff: string): Promise<string[]>
  /** Standalone with Placement: takes back allocations of these instances that no request holds (after a crash). */
  reconcileAllocations(instances: Iterable<string>): Promise<void>
  /** What the v1 attachments (v1-accelerators.ts) share with the ARQ flows. */
  internals: ArqInternals
}

export function createArqService(deps: ArqDeps): ArqMethods {
  const { db, committer } = deps
  const log = deps.log.child({ component: 'arqs' })
  const now = () => formatTimestamp(deps.clock.now())
  // Nova allocates through its scheduler; without Nova, Placement hears it from us.
  const allocator =
    deps.placement && !deps.nova ? createArqAllocator(deps.placement, log) : undefined

  /** Has the host's agent make the device ready for the VM; nothing for TEST_PCI. */
  const prepare = async (
    host: string,
    handle: { uuid: string; type: string; info: Record<string, string> },
  ) => {
    if (handle.type === 'TEST_PCI') return
    if (!deps.agentFor) throw new Error(`no agent RPC to prepare ${handle.type} handles`)
    const agent = deps.agentFor(host)
    if (handle.type === 'PCI') await agent.prepare({ address: pciAddress(handle.info) })
    else if (handle.type === 'MDEV')
      await agent.createMdev({
        parent: pciAddress(handle.info),
        type: handle.info.asked_type ?? '',
        uuid: handle.uuid,
      })
  }

  const program = createFpgaProgrammer({ agentFor: deps.agentFor, committer, log, now })

  const fail = async (arq: Arq, reason: string, handleId?: number): Promise<ArqBindOutcome> => {
    await committer.run(async (trx) => {
      const at = now()
      const { moved } = await updateArqStates(trx, [arq.uuid], 'BindFailed', {
        now: at,
        set: { attachHandleId: null, deployableId: null },
      })
      await recordArqAction(trx, moved, 'bind_failed', at, { reason })
      if (handleId !== undefined) await releaseAttachHandle(trx, handleId, { now: at })
    })
    log.warn({ arq: arq.uuid, reason }, 'bind failed')
    return { uuid: arq.uuid, state: 'BindFailed', reason }
  }

  /** The steps of a bind outside the database (program, prepare, allocate), then Bound. */
  const finish = async (
    arq: Arq,
    binding: ArqBindRequest,
    spec: ArqSpec | undefined,
    { target, handle }: Placed,
  ): Promise<ArqBindOutcome> => {
    const programmed = await program(binding.hostname, target, spec)
    if (programmed !== undefined) return fail(arq, programmed, handle.id)
    try {
      await prepare(binding.hostname, handle)
    } catch (err) {
      return fail(
        arq,
        `preparing ${pciAddress(handle.info)} failed: ${errorMessage(err)}`,
        handle.id,
      )
    }
    const rc = rcOf(target)
    if (allocator && target.rpUuid && rc) {
      try {
        await allocator.allocate(
          binding.instanceUuid,
          target.rpUuid,
          rc,
          binding.projectId ?? arq.projectId,
        )
      } catch (err) {
        return fail(arq, `Placement refused the allocation: ${errorMessage(err)}`, handle.id)
      }
    }
    const { count } = await committer.run(async (trx) => {
      const bound = await updateArqStates(trx, [arq.uuid], 'Bound', { now: now() })
      await recordArqAction(trx, bound.moved, 'bound', now())
      return bound
    })
    if (count === 0) {
      if (allocator && target.rpUuid && rc)
        await allocator.release(binding.instanceUuid, target.rpUuid, rc).catch(() => {})
      return fail(arq, 'the request changed while binding (unbound or deleted)', handle.id)
    }
    return { uuid: arq.uuid, state: 'Bound' }
  }

  /** Tells Nova, in one batch, how the ARQs of one bind ended (best effort; logged). */
  const notify = async (outcomes: ArqBindOutcome[], bindings: Record<string, ArqBindRequest>) => {
    if (!deps.nova || outcomes.length === 0) return
    const events = outcomes.map((o) => ({
      instanceUuid: bindings[o.uuid]!.instanceUuid,
      arqUuid: o.uuid,
      status: o.state === 'Bound' ? ('completed' as const) : ('failed' as const),
    }))
    try {
      const result = await deps.nova.sendArqBoundEvents(events)
      if (!result.ok) log.warn({ result }, 'Nova refused some accelerator-request-bound events')
    } catch (err) {
      log.error(
        { err, events: events.length },
        'could not tell Nova that accelerator requests resolved',
      )
    }
  }

  const release: ReleaseDeps = {
    db,
    committer,
    agentFor: deps.agentFor,
    allocator,
    v1Placement: deps.v1Placement,
    log,
    now,
    allocatedVia: deps.nova ? 'nova_v2' : 'standalone_v2',
    cleaner: deps.cleaner,
  }

  return {
    internals: { prepare, remove: (arqs) => removeArqs(release, arqs), notify },
    finishStaleDeletes: (cutoff) => finishStaleDeletes(release, cutoff),
    reconcileAllocations: (instances) => reconcileAllocations(release, instances),

    async createArqs(req) {
      const { deviceProfileName: name, maxArqs, projectId } = checkArqCreate(req)
      const profile = await getDeviceProfileByName(db.db, name)
      const specs = expandProfileGroups(profile.groups, maxArqs)
      // Ids and time are made before the write runs, so that a re-run writes the very same rows.
      const uuids = specs.map(() => newUuid())
      const at = now()
      const arqs = await committer.run(async (trx) => {
        const next = uuids.values()
        const created = await createArqs(
          trx,
          { profileId: profile.id, specs, projectId },
          { now: at, uuid: () => next.next().value! },
        )
        await recordArqAction(trx, created, 'created', at, { profileName: name })
        return created
      })
      log.info({ profile: name, arqs: arqs.length }, 'accelerator requests created')
      return arqs
    },

    async bindArqs(req) {
      const bindings = checkArqBindings(req?.bindings)
      const uuids = Object.keys(bindings)
      // Phase 1, all or nothing: every ARQ bindable, no instance bound twice; then BindStarted.
      const instances = new Set(uuids.map((u) => bindings[u]!.instanceUuid))
      const ms = deps.serviceDownTimeMs
      const lease = ms === undefined ? undefined : leaseCutoff(deps.clock, ms)
      const quota = await bindQuota(deps.quota, db.db, bindings)
      const started = await committer.run(async (trx) => {
        // The instances' bind locks first: a concurrent bind of the same instance, through any
        // conductor, waits for this one to commit and then sees its requests.
        await claimInstanceLocks(trx, db.dialect, instances, now())
        await quota?.lock(trx, now())
        const arqs = await Promise.all(uuids.map((u) => v2Arq(trx, u)))
        for (const arq of arqs) {
          if (!allowedFrom('BindStarted').includes(arq.state)) {
            throw new ConflictError(
              `accelerator request ${arq.uuid} is ${arq.state}; only Initial or Unbound requests can be bound`,
              {
                code: 'ARQ_BAD_STATE',
                details: { uuid: arq.uuid, state: arq.state },
              },
            )
          }
        }
        for (const instance of instances) {
          // MariaDB's REPEATABLE READ snapshot may predate the lock, so there the committed rows
          // are read afresh as well (this batch's own writes are visible only through trx).
          const others = [...(await listBoundArqsOfInstance(trx, instance, uuids))]
          if (db.dialect === 'mysql')
            others.push(...(await listBoundArqsOfInstance(db.db, instance, uuids)))
          if (others.length > 0) {
            throw new ConflictError(
              `instance ${instance} already has bound accelerator requests: ${others.join(', ')}`,
              {
                code: 'INSTANCE_ALREADY_BOUND',
                details: { field: 'instance_uuid', instance },
              },
            )
          }
        }
        // The request groups, for standalone placement and FPGA programming. Their sizes were
        // bounded when the requests were created, so expanding them again is cheap.
        const profiles = await listDeviceProfilesById(trx, [
          ...new Set(arqs.map((a) => a.deviceProfileId!)),
        ])
        const specsByProfile = new Map(
          profiles.map((p) => [p.id, expandProfileGroups(p.groups, Number.MAX_SAFE_INTEGER)]),
        )
        const specFor = (arq: Arq) =>
          specsByProfile
            .get(arq.deviceProfileId!)
            ?.find((s) => s.groupId === arq.deviceProfileGroupId)
        const steps: BindStep[] = []
        const claims: QuotaClaim[] = []
        const events: ArqEventItem[] = []
        const names = new Map(profiles.map((p) => [p.id, p.name]))
        const note = (
          moved: Arq[],
          action: ArqAction,
          reason?: string,
          handle?: ArqEventItem['handle'],
        ) =>
          events.push(
            ...moved.map((m) => ({
              arq: m,
              action,
              reason,
              profileName: names.get(m.deviceProfileId!),
              handle,
            })),
          )
        for (const arq of arqs) {
          const b = bindings[arq.uuid]!
          const set = {
            hostname: b.hostname,
            deviceRpUuid: b.deviceRpUuid ?? null,
            instanceUuid: b.instanceUuid,
            projectId: b.projectId ?? arq.projectId,
          }
          const { count } = await updateArqStates(trx, [arq.uuid], 'BindStarted', {
            now: now(),
            set,
          })
          if (count !== 1)
            throw new ConflictError(`accelerator request ${arq.uuid} changed while binding`, {
              code: 'ARQ_BAD_STATE',
            })
        }
        // Then each one's handle, claimed in this same transaction. One that needs nothing outside
        // the database is Bound here too: a whole bind in one commit.
        for (const arq of arqs) {
          const spec = specFor(arq)
          const placed = await claimHandleForArq(trx, arq, bindings[arq.uuid]!, spec, now(), lease)
          if (!('reason' in placed))
            claims.push(...bindClaims(arq, bindings[arq.uuid]!, placed.target))
          if ('reason' in placed) {
            const { moved } = await updateArqStates(trx, [arq.uuid], 'BindFailed', {
              now: now(),
              set: { attachHandleId: null, deployableId: null },
            })
            note(moved, 'bind_failed', placed.reason)
            steps.push({
              arq,
              done: { uuid: arq.uuid, state: 'BindFailed', reason: placed.reason },
            })
          } else if (needsMore(placed, spec, allocator !== undefined)) {
            steps.push({ arq, spec, placed })
          } else {
            const { moved } = await updateArqStates(trx, [arq.uuid], 'Bound', { now: now() })
            note(moved, 'bound', undefined, placed.handle)
            steps.push({ arq, done: { uuid: arq.uuid, state: 'Bound' } })
          }
        }
        await quota?.enforce(trx, claims)
        await recordArqEvents(trx, events, now())
        return steps
      })
      for (const { done } of started)
        if (done?.reason) log.warn({ arq: done.uuid, reason: done.reason }, 'bind failed')
      // Phase 2: the rest, each on its own, at once.
      const outcomes = await Promise.all(
        started.map(
          ({ arq, spec, placed, done }) =>
            done ??
            finish(arq, bindings[arq.uuid]!, spec, placed!).catch((err: unknown) =>
              fail(arq, errorMessage(err), placed!.handle.id),
            ),
        ),
      )
      await notify(outcomes, bindings)
      log.info(
        {
          bound: outcomes.filter((o) => o.state === 'Bound').length,
          failed: outcomes.filter((o) => o.state !== 'Bound').length,
        },
        'bind finished',
      )
      return outcomes
    },

    async unbindArqs(req) {
      const uuids = checkUuidList(req?.uuids)
      const arqs = await Promise.all(uuids.map((u) => v2Arq(db.db, u)))
      return Promise.all(arqs.map((arq) => unbindOne(release, arq)))
    },

    async deleteArqs(req) {
      const byInstance = req !== null && typeof req === 'object' && 'instanceUuid' in req
      const arqs = byInstance
        ? await listArqs(db.db, ofInstance(checkArqsOfInstance(req)))
        : await Promise.all(
            checkUuidList((req as { uuids?: unknown } | null)?.uuids).map((u) =>
              v2Arq(db.db, u).catch(() => undefined),
            ),
          )
      const deleted = await removeArqs(
        release,
        arqs.filter((a): a is Arq => a !== undefined),
      )
      if (!byInstance) {
        const missing = (req as { uuids: string[] }).uuids.filter(
          (u) => !arqs.some((a) => a?.uuid === u),
        )
        if (missing.length > 0) {
          throw new NotFoundError(`accelerator request ${missing.join(', ')} not found`, {
            code: 'ARQ_NOT_FOUND',
            details: { uuids: missing },
          })
        }
      }
      return { deleted }
    },
  }
}
