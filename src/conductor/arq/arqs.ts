/**
 * Accelerator requests, conductor side (cyborg-v2-facts §2.3, with its gaps fixed): create from a
 * device profile here; bind (Initial|Unbound → BindStarted → Bound | BindFailed) in arq-bind.ts and
 * arq-bind-finish.ts; unbind and delete, which release what a request holds, in arq-release.ts.
 * This file wires them into the service.
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
import { keyedMarkersFound } from '../../db/core/commit-markers.js'
import type { DatabaseHandle } from '../../db/core/connection.js'
import type { GroupCommitter } from '../../db/core/group-commit.js'
import { createArqs, getArq, listArqs } from '../../db/arqs.js'
import { createProfileCache } from './profile-cache.js'
import { getDeviceProfileByName } from '../../db/reads/device-profile-reads.js'
import { expandProfileGroups, type Arq } from '../../domain/arq.js'
import type { DeviceProfile } from '../../domain/device-profile.js'
import { ConflictError, NotFoundError } from '../../domain/errors.js'
import { CYBORG_NAMESPACE, newUuid, uuidV5 } from '../../domain/ids.js'
import type { Logger } from '../../domain/logger.js'
import { formatTimestamp, type Clock } from '../../domain/time.js'
import type { NovaClient } from '../../openstack/nova.js'
import type { PlacementClient } from '../../openstack/placement.js'
import { createArqAllocator } from './arq-allocations.js'
import { recordArqAction } from '../../db/outbox/arq-events.js'
import {
  finishStaleDeletes,
  reconcileAllocations,
  deletedMarker,
  removeArqs,
  unbindOne,
  type ReleaseDeps,
} from './arq-release.js'
import { createFpgaProgrammer } from './arq-program.js'
import type { V1Placement } from '../v1-placement.js'
import type { AgentRpc } from '../../rpc/agent-rpc.js'
import type { ConductorRpc } from '../../rpc/conductor-rpc.js'
import { v2Arq, type ArqInternals } from './arq-internals.js'
import type { LimitSource } from '../../domain/quota.js'
import { bindArqs, type BindDeps } from './arq-bind.js'
import { notifyNova, prepareHandle } from './arq-bind-finish.js'
import { checkArqCreate, checkArqsOfInstance, checkDeleteId, checkUuidList } from '../validate.js'

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
  /** Clean before reuse (cleaning/cleaning.ts): released units go to cleaning. @default none: straight back */
  cleaner?: ReleaseDeps['cleaner']
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

  const program = createFpgaProgrammer({ agentFor: deps.agentFor, committer, log, now })
  // The profiles creates read (committed), so that binds and deletes need not (issue 28).
  const profiles = createProfileCache()
  const bind: BindDeps = { ...deps, log, now, allocator, program, profiles }

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
    profiles,
  }

  /** Which of `missing` the delete `deleteId` deleted earlier (its markers say so). */
  const deletedEarlier = async (deleteId: string | undefined, missing: string[]) => {
    if (deleteId === undefined || missing.length === 0) return []
    const found = await keyedMarkersFound(
      db.db,
      missing.map((u) => deletedMarker(deleteId, u.toLowerCase())),
    )
    return missing.filter((u) => found.has(deletedMarker(deleteId, u.toLowerCase())))
  }

  return {
    internals: {
      prepare: (host, handle) => prepareHandle(deps, host, handle),
      remove: (arqs) => removeArqs(release, arqs),
      notify: (outcomes, bindings) => notifyNova({ nova: deps.nova, log }, outcomes, bindings),
    },
    finishStaleDeletes: (cutoff) => finishStaleDeletes(release, cutoff),
    reconcileAllocations: (instances) => reconcileAllocations(release, instances),

    async createArqs(req) {
      const { deviceProfileName: name, maxArqs, projectId, createId } = checkArqCreate(req)
      const read = async () => {
        const profile = await getDeviceProfileByName(db.db, name)
        profiles.remember(profile)
        return profile
      }
      const create = async (profile: DeviceProfile) => {
        const specs = expandProfileGroups(profile.groups, maxArqs)
        // Ids and time are made before the write runs, so that a re-run writes the very same rows;
        // with the caller's key, a redelivery of the request makes the same ids again.
        const uuids = specs.map((_, i) => (createId ? arqUuidOf(createId, i) : newUuid()))
        const at = now()
        return committer
          .run(async (trx) => {
            const next = uuids.values()
            const created = await createArqs(
              trx,
              { profileId: profile.id, specs, projectId },
              { now: at, uuid: () => next.next().value! },
            )
            await recordArqAction(trx, created, 'created', at, { profileName: name })
            return created
          })
          .catch(async (err: unknown) => {
            const before = createId ? await createdBefore(db, err, uuids) : undefined
            if (!before) throw err
            log.info(
              { createId, arqs: before.length },
              'create redelivered; answered from the first run',
            )
            return before
          })
      }
      // A known profile needs no read: the INSERT's foreign key proves it still exists, and names
      // are unique, so it is the profile of that name. Deleted since: read by name, once more.
      const known = profiles.byName(name)
      const arqs = await (known ? create(known) : read().then(create)).catch(
        async (err: unknown) => {
          if (!known || !(err instanceof NotFoundError) || err.code !== 'DEVICE_PROFILE_NOT_FOUND')
            throw err
          profiles.forget(known)
          return create(await read())
        },
      )
      log.info({ profile: name, arqs: arqs.length }, 'accelerator requests created')
      return arqs
    },

    bindArqs: (req) => bindArqs(bind, req), // arq-bind.ts

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
      const deleteId = byInstance
        ? undefined
        : checkDeleteId((req as { deleteId?: unknown }).deleteId)
      const deleted = await removeArqs(
        release,
        arqs.filter((a): a is Arq => a !== undefined),
        deleteId,
      )
      if (!byInstance) {
        let missing = (req as { uuids: string[] }).uuids.filter(
          (u) => !arqs.some((a) => a?.uuid === u),
        )
        // This delete delivered again (docs/arqs.md, "Redelivered deletes"): what its first run
        // deleted is answered deleted again; only what that run did not find stays a 404.
        const earlier = await deletedEarlier(deleteId, missing)
        if (earlier.length > 0) {
          log.info({ arqs: earlier, deleteId }, 'delete redelivered; answered from the first run')
          deleted.push(...earlier)
          missing = missing.filter((u) => !earlier.includes(u))
        }
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

/** The uuid of the `index`th ARQ of the create `createId` (ConductorRpc 1.9): the same every time. */
const arqUuidOf = (createId: string, index: number) =>
  uuidV5(JSON.stringify(['arq', createId.toLowerCase(), index]), CYBORG_NAMESPACE)

/**
 * The ARQs a keyed create made before, when `err` is its INSERT failing on their uuids (the same
 * create delivered again after its first run committed) and they are all still there; else none.
 */
async function createdBefore(
  db: DatabaseHandle,
  err: unknown,
  uuids: string[],
): Promise<Arq[] | undefined> {
  if (!(err instanceof ConflictError) || err.code !== 'ARQ_EXISTS') return undefined
  const found = await Promise.all(uuids.map((u) => getArq(db.db, u).catch(() => undefined)))
  return found.every((a) => a !== undefined) ? found : undefined
}
