/**
 * Binding accelerator requests (Initial|Unbound → BindStarted → Bound | BindFailed), in two phases.
 *
 * Phase 1, one transaction, all or nothing: the instances' bind locks and the projects' quota
 * locks; every request bindable and no instance bound twice (`lockAndCheck`); the request groups
 * (`loadSpecs`); then each one's handle, claimed with SKIP LOCKED (arq-claim.ts), and the request
 * written once with its binding and handle (`claimHandles`): BindStarted, or Bound at once when it
 * needs nothing outside the database (a whole bind in one commit), or BindFailed. Quota is enforced and the events are
 * written before the commit.
 * Phase 2 (arq-bind-finish.ts): the rest, each on its own, at once; then Nova hears in one batch.
 *
 * A bind carries its caller's key (`bindId`, one per API request) onto every request it moves. The
 * same bind delivered again by RabbitMQ after its first run committed finds the key on all its
 * requests and is answered from them, changing nothing (docs/arqs.md, "Redelivered binds").
 */
import type { DatabaseHandle } from '../../db/core/connection.js'
import type { WriteTrx } from '../../db/core/group-commit.js'
import { listBoundArqsOfInstance } from '../../db/arqs.js'
import { moveLockedArq } from '../../db/arq-locked.js'
import { claimInstanceLocks } from '../../db/arq-instances.js'
import { listDeviceProfilesById } from '../../db/reads/device-profile-reads.js'
import { recordArqEvents, type ArqEventItem } from '../../db/outbox/arq-events.js'
import { allowedFrom, expandProfileGroups, type Arq, type ArqSpec } from '../../domain/arq.js'
import { ConflictError } from '../../domain/errors.js'
import { errorMessage } from '../../domain/error-message.js'
import type { ArqAction } from '../../domain/events.js'
import type { LimitSource } from '../../domain/quota.js'
import type { Clock } from '../../domain/time.js'
import type { ArqBindOutcome, ArqBindRequest, ConductorRpc } from '../../rpc/conductor-rpc.js'
import { leaseCutoff } from '../lease-sweep.js'
import { claimHandleForArq, needsMore, type Placed } from './arq-claim.js'
import { failBind, finishBind, notifyNova, type BindFinishDeps } from './arq-bind-finish.js'
import { v2ArqForUpdate } from './arq-internals.js'
import { bindClaims, bindQuota, type QuotaClaim, type QuotaGate } from './quota-check.js'
import { checkArqBindings, checkBindId } from '../validate.js'
import type { ProfileCache } from './profile-cache.js'

export interface BindDeps extends BindFinishDeps {
  db: DatabaseHandle
  clock: Clock
  /** `[DEFAULT] service_down_time` in ms: a bind refuses a host whose agent is past it. @default no check */
  serviceDownTimeMs?: number | undefined
  /** `[quota] driver = unified_limits`: the limits standalone binds are held to (docs/quota.md). */
  quota?: LimitSource | undefined
  /** Profiles already read by this conductor (profile-cache.ts). @default each bind reads them */
  profiles?: ProfileCache | undefined
}

type Bindings = Record<string, ArqBindRequest>

/** What a bind carries besides its bindings. */
export interface BindRun {
  /** Agents seen since are alive (`[DEFAULT] service_down_time`); undefined: no check. */
  lease: string | undefined
  /** The caller's key (ConductorRpc 1.9), written on every request the bind moves. */
  bindId: string | undefined
}

/** What `lockAndCheck` found: the requests, locked, and whether they are a redelivered bind. */
export interface Checked {
  arqs: Arq[]
  /** Every request carries the bind's key: its first run committed; answer from the rows. */
  replayed: boolean
}

/** One ARQ after the bind's transaction: finished there (`done`), or placed with steps left. */
export interface BindStep {
  arq: Arq
  spec?: ArqSpec | undefined
  placed?: Placed
  done?: ArqBindOutcome
}

/** What the claim phase gathers: each request's step, the quota claims, the events to write. */
interface Claimed {
  steps: BindStep[]
  claims: QuotaClaim[]
  events: ArqEventItem[]
}

/**
 * Whether `arqs` are the bind `bindId` delivered again: every one carries its key (the first run
 * wrote it on all of them in one transaction). Only some: a later bind has moved the others since,
 * and this stale delivery must change nothing, so it is refused.
 */
function isRedelivery(arqs: readonly Arq[], bindId: string | undefined): boolean {
  if (bindId === undefined) return false
  const mine = arqs.filter((a) => a.bindId === bindId)
  if (mine.length === 0) return false
  if (mine.length === arqs.length) return true
  const other = arqs.find((a) => a.bindId !== bindId)!
  throw new ConflictError(
    `accelerator request ${other.uuid} is ${other.state} and not part of bind ${bindId}, which bound ${mine[0]!.uuid} already`,
    { code: 'ARQ_BAD_STATE', details: { uuid: other.uuid, state: other.state } },
  )
}

/**
 * Takes the instances' bind locks first (a concurrent bind of the same instance, through any
 * conductor, waits for this one to commit and then sees its requests), then the quota locks; loads
 * the requests and refuses one that is not bindable or an instance already bound, unless the
 * requests all carry `bindId` (a redelivery: `replayed`, nothing else checked).
 */
export async function lockAndCheck(
  deps: Pick<BindDeps, 'db' | 'now'>,
  trx: WriteTrx,
  bindings: Bindings,
  quota: QuotaGate | undefined,
  bindId?: string,
): Promise<Checked> {
  const uuids = Object.keys(bindings)
  const instances = new Set(uuids.map((u) => bindings[u]!.instanceUuid))
  const relocked = await claimInstanceLocks(trx, deps.db.dialect, instances, deps.now())
  await quota?.lock(trx, deps.now())
  // Locked until the commit, so that each later move is one UPDATE with nothing read back.
  const arqs = await Promise.all(uuids.map((u) => v2ArqForUpdate(trx, u)))
  if (isRedelivery(arqs, bindId)) return { arqs, replayed: true }
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
    // MariaDB's REPEATABLE READ snapshot may predate the lock, so there the committed rows are
    // read afresh outside the transaction; through it as well only when an earlier write of this
    // batch took the same instance's lock (every write that binds an instance takes it first, and
    // its binds are visible only through trx). Elsewhere trx sees both (issue 28: one read).
    const mysql = deps.db.dialect === 'mysql'
    const others = mysql ? await listBoundArqsOfInstance(deps.db.db, instance, uuids) : []
    if (!mysql || relocked.has(instance))
      others.push(...(await listBoundArqsOfInstance(trx, instance, uuids)))
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
  return { arqs, replayed: false }
}

/** A redelivered bind's answer for one request: its state now, as the first run (and since) left it. */
function replayOutcome(arq: Arq): ArqBindOutcome {
  if (arq.state !== 'BindFailed') return { uuid: arq.uuid, state: arq.state }
  const reason =
    'failed by the first delivery of this bind (its accelerator.arq.bind_failed event says why)'
  return { uuid: arq.uuid, state: arq.state, reason }
}

/**
 * The request groups of `arqs`, for standalone placement and FPGA programming, and their profiles'
 * names for the events. Their sizes were bounded when the requests were created, so expanding them
 * again is cheap.
 */
export async function loadSpecs(trx: WriteTrx, arqs: readonly Arq[], cache?: ProfileCache) {
  const ids = [...new Set(arqs.map((a) => a.deviceProfileId!))]
  const profiles = await (cache ? cache.byIds(trx, ids) : listDeviceProfilesById(trx, ids))
  const specsByProfile = new Map(
    profiles.map((p) => [p.id, expandProfileGroups(p.groups, Number.MAX_SAFE_INTEGER)]),
  )
  const specFor = (arq: Arq) =>
    specsByProfile.get(arq.deviceProfileId!)?.find((s) => s.groupId === arq.deviceProfileGroupId)
  return { specFor, names: new Map(profiles.map((p) => [p.id, p.name])) }
}

/** The binding a request takes on, with the bind's key. */
function bindingOf(arq: Arq, b: ArqBindRequest, bindId: string | undefined) {
  return {
    hostname: b.hostname,
    deviceRpUuid: b.deviceRpUuid ?? null,
    instanceUuid: b.instanceUuid,
    projectId: b.projectId ?? arq.projectId,
    bindId: bindId ?? null,
  }
}

/** Where a bind starts from: its request's states before BindStarted. */
const START = allowedFrom('BindStarted')

/**
 * Claims each request's handle in the bind's transaction (`arqs`: locked by `lockAndCheck`), then
 * writes the request once with its binding: no handle is BindFailed; one that needs nothing outside
 * the database is Bound with its handle; the others are BindStarted with their handle (recorded in
 * the claim's transaction, so a crash never leaves a handle in use that no request names), left for
 * phase 2. BindStarted is never seen by another transaction on the first two paths, so they move
 * from the request's state at once (issue 28: one UPDATE per request instead of two or three).
 */
export async function claimHandles(
  deps: Pick<BindDeps, 'now' | 'allocator'>,
  trx: WriteTrx,
  arqs: readonly Arq[],
  bindings: Bindings,
  groups: Awaited<ReturnType<typeof loadSpecs>>,
  { lease, bindId }: BindRun,
): Promise<Claimed> {
  const { now } = deps
  const out: Claimed = { steps: [], claims: [], events: [] }
  const note = (
    moved: Arq[],
    action: ArqAction,
    reason?: string,
    handle?: ArqEventItem['handle'],
  ) =>
    out.events.push(
      ...moved.map((m) => ({
        arq: m,
        action,
        reason,
        profileName: groups.names.get(m.deviceProfileId!),
        handle,
      })),
    )
  for (const arq of arqs) {
    const spec = groups.specFor(arq)
    const placed = await claimHandleForArq(trx, bindings[arq.uuid]!, spec, now(), lease)
    if (!('reason' in placed))
      out.claims.push(...bindClaims(arq, bindings[arq.uuid]!, placed.target))
    const set = bindingOf(arq, bindings[arq.uuid]!, bindId)
    const changed = () =>
      new ConflictError(`accelerator request ${arq.uuid} changed while binding`, {
        code: 'ARQ_BAD_STATE',
      })
    if ('reason' in placed) {
      const moved = await moveLockedArq(trx, arq, 'BindFailed', {
        now: now(),
        set: { ...set, attachHandleId: null, deployableId: null },
        from: START,
      })
      if (!moved) throw changed()
      note([moved], 'bind_failed', placed.reason)
      out.steps.push({ arq, done: { uuid: arq.uuid, state: 'BindFailed', reason: placed.reason } })
      continue
    }
    const held = { attachHandleId: placed.handle.id, deployableId: placed.handle.deployableId }
    const more = needsMore(placed, spec, deps.allocator !== undefined)
    const moved = await moveLockedArq(trx, arq, more ? 'BindStarted' : 'Bound', {
      now: now(),
      set: { ...set, ...held },
      from: START,
    })
    if (!moved) throw changed()
    if (more) {
      out.steps.push({ arq: moved, spec, placed })
    } else {
      note([moved], 'bound', undefined, placed.handle)
      out.steps.push({ arq, done: { uuid: arq.uuid, state: 'Bound' } })
    }
  }
  return out
}

/**
 * Phase 1, the bind's transaction: its phases in order, then quota enforced and the events written.
 * A redelivered bind (`replayed`) writes nothing: each step is done, as its request is now.
 */
export async function startBind(
  deps: BindDeps,
  bindings: Bindings,
  quota: QuotaGate | undefined,
  run: BindRun,
): Promise<{ steps: BindStep[]; replayed: boolean }> {
  return deps.committer.run(async (trx) => {
    const { arqs, replayed } = await lockAndCheck(deps, trx, bindings, quota, run.bindId)
    if (replayed) return { replayed, steps: arqs.map((arq) => ({ arq, done: replayOutcome(arq) })) }
    const groups = await loadSpecs(trx, arqs, deps.profiles)
    const { steps, claims, events } = await claimHandles(deps, trx, arqs, bindings, groups, run)
    await quota?.enforce(trx, claims)
    await recordArqEvents(trx, events, deps.now())
    return { replayed, steps }
  })
}

/** `bindArqs` (ConductorRpc): phase 1, then phase 2 for what is left, then Nova. */
export async function bindArqs(
  deps: BindDeps,
  req: Parameters<ConductorRpc['bindArqs']>[0],
): Promise<ArqBindOutcome[]> {
  const bindings = checkArqBindings(req?.bindings)
  const bindId = checkBindId(req?.bindId)
  const ms = deps.serviceDownTimeMs
  const lease = ms === undefined ? undefined : leaseCutoff(deps.clock, ms)
  const quota = await bindQuota(deps.quota, deps.db.db, bindings)
  const { steps: started, replayed } = await startBind(deps, bindings, quota, { lease, bindId })
  if (replayed) {
    // The first run did the rest, Nova included (or the reaper will, if it died mid-bind).
    deps.log.info({ bindId, arqs: started.length }, 'bind redelivered; answered from the first run')
    return started.map(({ done }) => done!)
  }
  for (const { done } of started)
    if (done?.reason) deps.log.warn({ arq: done.uuid, reason: done.reason }, 'bind failed')
  // Phase 2: the rest, each on its own, at once.
  const outcomes = await Promise.all(
    started.map(
      ({ arq, spec, placed, done }) =>
        done ??
        finishBind(deps, arq, bindings[arq.uuid]!, spec, placed!).catch((err: unknown) =>
          failBind(deps, arq, errorMessage(err), placed!.handle.id),
        ),
    ),
  )
  await notifyNova(deps, outcomes, bindings)
  deps.log.info(
    {
      bound: outcomes.filter((o) => o.state === 'Bound').length,
      failed: outcomes.filter((o) => o.state !== 'Bound').length,
    },
    'bind finished',
  )
  return outcomes
}
