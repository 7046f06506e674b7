/**
 * The conductor's wiring in parts (conductor.ts puts them together): the commit path with the
 * loops that follow commits (event relay, custody sealer, webhook dispatcher), the Placement sync
 * after a change, clean before reuse, the accelerator requests with the v1 attachments, and programs
 * and configures with their sweep.
 */
import { createGroupCommitter, type GroupCommitter } from '../db/core/group-commit.js'
import type { DatabaseHandle } from '../db/core/connection.js'
import { updateReportHash } from '../db/service-rows.js'
import type { Logger } from '../domain/logger.js'
import type { Metrics } from '../domain/metrics.js'
import { formatTimestamp, type Clock } from '../domain/time.js'
import { createEventRelay, wakingCommitter } from './outbox/event-relay.js'
import { createCustodySealer, sealingCommitter } from './outbox/custody-sealer.js'
import { createWebhookSink } from './outbox/webhook-sink.js'
import { createWebhookDispatcher } from './outbox/webhook-dispatcher.js'
import {
  createPlacementSync,
  type PlacementSync,
  type RootHint,
} from './placement/placement-sync.js'
import { createArqService } from './arq/arqs.js'
import { createV1AcceleratorService } from './v1-accelerators.js'
import { createV1Placement } from './v1-placement.js'
import { createUnitCleaning, PLACEMENT_HOLD_MS, PLACEMENT_WINDOW_MS } from './cleaning/cleaning.js'
import { createDeployableProgram } from './reconfig/deployable-program.js'
import { createDeviceConfigure } from './reconfig/device-configure.js'
import { createReconfigSweep } from './reconfig/reconfig-sweep.js'
import type { ConductorDeps, ConductorOptions } from './conductor-types.js'

/** What every part is built with. */
export interface Wiring {
  db: DatabaseHandle
  clock: Clock
  uuid: () => string
  log: Logger
  now: () => string
}

/** After a change: brings Placement in step with a host (conductor.ts's `syncPlacement`). */
export type SyncPlacement = (
  host: string,
  root?: RootHint,
) => Promise<{ complete: boolean; deleted: number }>

/**
 * The group committer, wrapped so that commits wake the event relay (events are written with the
 * changes) and the custody sealer; the webhook sink queues deliveries, which the dispatcher posts
 * on its own (webhook-dispatcher.ts).
 */
export function createCommitPath(
  deps: Pick<ConductorDeps, 'eventSinks'>,
  options: Pick<
    ConductorOptions,
    'saveIntervalMs' | 'maxBatch' | 'webhooks' | 'events' | 'custody'
  >,
  w: Wiring & { metrics: Metrics },
) {
  const { db, log, clock, uuid, metrics } = w
  const { saveIntervalMs = 10, maxBatch = 64 } = options
  const dispatcher =
    options.webhooks === false
      ? undefined
      : createWebhookDispatcher({ db, log, clock }, options.webhooks)
  const sinks = [...(deps.eventSinks ?? [])]
  if (dispatcher)
    sinks.push(
      createWebhookSink({ db, now: () => formatTimestamp(clock.now()), onQueued: dispatcher.wake }),
    )
  const relay = createEventRelay({ db, sinks, log, clock }, options.events)
  const sealer = createCustodySealer({ db, log, clock, uuid }, options.custody)
  const committer = sealingCommitter(
    wakingCommitter(
      createGroupCommitter(db, {
        intervalMs: saveIntervalMs,
        maxBatch,
        onBatch: (size, seconds) => {
          metrics.observe('cyborg_db_commit_batch_size', size)
          metrics.observe('cyborg_db_commit_duration_seconds', seconds)
        },
        onRetry: (cause) => metrics.inc('cyborg_db_write_retries_total', { cause }),
      }),
      relay.wake,
    ),
    sealer.wake,
  )
  return { committer, relay, sealer, dispatcher }
}

/**
 * Brings Placement in step with `host` after a change. `complete` when nothing is left over; else the
 * host's report hash is cleared, so that its next report (unchanged or not) tries again.
 */
export async function syncHostPlacement(
  deps: {
    placement?: Pick<PlacementSync, 'syncHost'> | undefined
    committer: Pick<GroupCommitter, 'run'>
    log: Logger
    now: () => string
  },
  host: string,
  root?: RootHint,
): Promise<{ complete: boolean; deleted: number }> {
  const { placement, committer, log, now } = deps
  if (!placement) return { complete: true, deleted: 0 }
  try {
    const outcome = await placement.syncHost(host, root)
    if (outcome.written + outcome.deleted > 0) log.info({ host, ...outcome }, 'placement synced')
    if (!outcome.complete) await committer.run((trx) => updateReportHash(trx, host, null, now()))
    return outcome
  } catch (err) {
    log.warn({ err, host }, 'placement sync failed; the next report of the host retries it')
  }
  await committer.run((trx) => updateReportHash(trx, host, null, now()))
  return { complete: false, deleted: 0 }
}

/** Placement kept in step per host (placement-sync.ts) when there is one, and the sync after a change. */
export function wirePlacement(
  deps: Pick<ConductorDeps, 'placement' | 'agentFor' | 'cleanAgentFor'>,
  options: Pick<ConductorOptions, 'cleaning'>,
  w: Wiring & { committer: Pick<GroupCommitter, 'run'> },
) {
  const { db, committer, log, now } = w
  const cleans = options.cleaning !== false && (deps.cleanAgentFor ?? deps.agentFor) !== undefined
  const placement =
    deps.placement &&
    createPlacementSync({
      db,
      placement: deps.placement.client,
      write: (fn) => committer.run(fn),
      log,
      createRootProvider: deps.placement.createRootProvider,
      // A clean within the window never shows reserved (issue 28; cleaning.ts syncs after it).
      cleaningGraceMs: cleans
        ? ((options.cleaning || undefined)?.placementWindowMs ?? PLACEMENT_WINDOW_MS)
        : 0,
      cleaningHoldMs: cleans
        ? ((options.cleaning || undefined)?.placementHoldMs ?? PLACEMENT_HOLD_MS)
        : 0,
      clock: w.clock,
    })
  const syncPlacement: SyncPlacement = (host, root) =>
    syncHostPlacement({ placement, committer, log, now }, host, root)
  return { placement, syncPlacement }
}

/** Clean before reuse (docs/cleaning.md), when agents can be reached and it is not turned off. */
export function wireCleaning(
  deps: Pick<ConductorDeps, 'agentFor' | 'cleanAgentFor' | 'abortAgentFor' | 'metrics'>,
  options: Pick<ConductorOptions, 'cleaning'>,
  w: Wiring & { committer: Pick<GroupCommitter, 'run'>; syncPlacement: SyncPlacement },
) {
  const cleanAgentFor =
    options.cleaning === false ? undefined : (deps.cleanAgentFor ?? deps.agentFor)
  return (
    cleanAgentFor &&
    createUnitCleaning(
      {
        db: w.db,
        committer: w.committer,
        agentFor: cleanAgentFor,
        // A force's abort waits the ordinary RPC time, not a clean's (two retry intervals).
        abortAgentFor: deps.abortAgentFor ?? deps.agentFor,
        syncPlacement: (host) => w.syncPlacement(host),
        log: w.log,
        clock: w.clock,
        uuid: w.uuid,
        metrics: deps.metrics,
      },
      options.cleaning || undefined,
    )
  )
}

/** Programs and configures (docs/fpga.md): deployable-program.ts, device-configure.ts, reconfig-sweep.ts; all need agents. */
export function wireReconfig(
  deps: Pick<ConductorDeps, 'agentFor' | 'reconfigAgentFor' | 'placement'>,
  options: Pick<ConductorOptions, 'reconfig'>,
  w: Wiring & { committer: Pick<GroupCommitter, 'run'>; syncPlacement: SyncPlacement },
) {
  const { agentFor } = deps
  if (!agentFor) return {}
  const { db, committer, log, now, uuid, clock } = w
  const syncPlacement = (host: string) => w.syncPlacement(host)
  const reconfigAgentFor = deps.reconfigAgentFor ?? agentFor
  const reconfigMs = options.reconfig?.timeoutMs ?? 2_400_000
  const programDeployable = createDeployableProgram({
    db,
    committer,
    agentFor,
    programAgentFor: reconfigAgentFor,
    syncPlacement,
    log,
    now,
    uuid,
  })
  const configureDevice = createDeviceConfigure({
    db,
    committer,
    agentFor,
    reconfigAgentFor,
    placement: deps.placement?.client,
    syncPlacement,
    log,
    now,
    uuid,
  })
  const reconfigSweep = createReconfigSweep(
    {
      db,
      committer,
      agentFor,
      syncPlacement,
      log,
      now,
      staleBefore: () => formatTimestamp(new Date(clock.now().getTime() - reconfigMs)),
    },
    options.reconfig,
  )
  return { programDeployable, configureDevice, reconfigSweep }
}

/** The accelerator requests (arq/arqs.ts) and the v1 attachments that share their flows (v1-accelerators.ts). */
export function wireArqs(
  deps: Pick<ConductorDeps, 'agentFor' | 'nova' | 'placement' | 'quota'>,
  options: Pick<ConductorOptions, 'serviceDownTimeMs'>,
  w: Wiring & {
    committer: Pick<GroupCommitter, 'run'>
    cleaner: Parameters<typeof createArqService>[0]['cleaner']
  },
) {
  const { db, committer, log, clock } = w
  const v1Placement = deps.placement ? createV1Placement(deps.placement.client, log) : undefined
  const arqs = createArqService({
    cleaner: w.cleaner,
    db,
    committer,
    agentFor: deps.agentFor,
    nova: deps.nova,
    placement: deps.placement?.client,
    v1Placement,
    log,
    clock,
    serviceDownTimeMs: options.serviceDownTimeMs,
    quota: deps.quota,
  })
  const v1 = createV1AcceleratorService({
    db,
    committer,
    arqs: arqs.internals,
    placement: v1Placement,
    log,
    clock,
    serviceDownTimeMs: options.serviceDownTimeMs,
    quota: deps.quota,
  })
  return { v1Placement, arqs, v1 }
}
