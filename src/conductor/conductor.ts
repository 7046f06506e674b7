/**
 * The conductor (seed 002): the single writer. Every write goes through one group committer, so
 * writes that arrive together share one transaction (the "save out rate" of the seed), and every
 * input is re-checked before it reaches the database.
 *
 * This file wires the services and lists, one line each, which function serves each RPC method
 * (the `rpc` table below); the flows live in the files it names.
 */
import { createGroupCommitter } from '../db/core/group-commit.js'
import { updateReportHash } from '../db/service-rows.js'
import { deleteStaleInstanceLocks } from '../db/arq-instances.js'
import type { ConductorRpc } from '../rpc/conductor-rpc.js'
import { createLifecycle } from './lifecycle.js'
import { UnavailableError } from '../domain/errors.js'
import { createPlacementSync, type RootHint } from './placement-sync.js'
import { createDeployableProgram } from './reconfig/deployable-program.js'
import { createDeviceConfigure } from './reconfig/device-configure.js'
import { createReconfigSweep } from './reconfig/reconfig-sweep.js'
import { createArqService } from './arq/arqs.js'
import { createRemoteAcceleratorService } from './remote-accelerators.js'
import { createV1AcceleratorService } from './v1-accelerators.js'
import { createV1Placement } from './v1-placement.js'
import { createDriverAdminService } from './driver-admin.js'
import { reapStaleBinds } from './arq/arq-reaper.js'
import { createReportIngest } from './report-ingest.js'
import { createResourceWrites } from './resource-writes.js'
import { createHeartbeatBatcher } from './heartbeat-batch.js'
import { leaseCutoff, sweepLeases } from './lease-sweep.js'
import { startFleetGauges } from './fleet-metrics.js'
import { noopMetrics } from '../domain/metrics.js'
import { createEventRelay, wakingCommitter } from './outbox/event-relay.js'
import { createCustodySealer, sealingCommitter } from './outbox/custody-sealer.js'
import { createWebhookSink } from './outbox/webhook-sink.js'
import { createWebhookDispatcher } from './outbox/webhook-dispatcher.js'
import { createWebhookWrites } from './outbox/webhooks.js'
import { createPlacementExplain } from './placement-explain.js'
import { newUuid } from '../domain/ids.js'
import { formatTimestamp } from '../domain/time.js'
import { createUnitCleaning } from './cleaning/cleaning.js'
import type { Conductor, ConductorDeps, ConductorOptions } from './conductor-types.js'

export type { Conductor, ConductorDeps, ConductorOptions } from './conductor-types.js'

export function createConductor(deps: ConductorDeps, options: ConductorOptions = {}): Conductor {
  const { db, clock, uuid = newUuid } = deps
  const { saveIntervalMs = 10, maxBatch = 64 } = options
  const log = deps.log.child({ component: 'conductor' })
  const metrics = deps.metrics ?? noopMetrics
  // Events are written with the changes; the relay publishes them, woken by commits that wrote some.
  // The webhook sink queues deliveries, which the dispatcher posts on its own (webhook-dispatcher.ts).
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
      }),
      relay.wake,
    ),
    sealer.wake,
  )
  const now = () => formatTimestamp(clock.now())
  const placement =
    deps.placement &&
    createPlacementSync({
      db,
      placement: deps.placement.client,
      write: (fn) => committer.run(fn),
      log,
      createRootProvider: deps.placement.createRootProvider,
    })

  /**
   * Brings Placement in step with `host` after a change. `complete` when nothing is left over; else the
   * host's report hash is cleared, so that its next report (unchanged or not) tries again.
   */
  const syncPlacement = async (
    host: string,
    root?: RootHint,
  ): Promise<{ complete: boolean; deleted: number }> => {
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

  // A lifecycle change (ready → installing → active | error) changes what is offered: sync after it.
  const lifecycle =
    deps.agentFor &&
    createLifecycle({
      db,
      committer,
      agentFor: deps.agentFor,
      log,
      clock,
      onInventoryChanged: async (host) => void (await syncPlacement(host)),
    })
  const noAgents = (): never => {
    throw new UnavailableError('this conductor cannot reach agents', { code: 'NO_AGENT_RPC' })
  }

  const cleanAgentFor =
    options.cleaning === false ? undefined : (deps.cleanAgentFor ?? deps.agentFor)
  const cleaning =
    cleanAgentFor &&
    createUnitCleaning(
      {
        db,
        committer,
        agentFor: cleanAgentFor,
        // A force's abort waits the ordinary RPC time, not a clean's (two retry intervals).
        abortAgentFor: deps.abortAgentFor ?? deps.agentFor,
        syncPlacement: (host) => syncPlacement(host),
        log,
        clock,
        uuid,
        metrics: deps.metrics,
      },
      options.cleaning || undefined,
    )

  const v1Placement = deps.placement ? createV1Placement(deps.placement.client, log) : undefined
  const arqs = createArqService({
    cleaner: cleaning,
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
  const ingest = createReportIngest({
    db,
    committer,
    log,
    now,
    recoveryReports: options.healthRecoveryReports,
    ...(placement ? { syncPlacement } : {}),
  })
  const heartbeats =
    options.heartbeats === false
      ? undefined
      : createHeartbeatBatcher({ db, committer, now }, options.heartbeats)
  const writes = createResourceWrites({ committer, log, now, uuid, syncPlacement, heartbeats })
  const driverAdmin = createDriverAdminService(
    { db, agentFor: deps.agentFor ?? noAgents, log, committer, now },
    options.driverAdmin,
  )
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
  const remote = createRemoteAcceleratorService(
    { db, agentFor: deps.agentFor, uuid, log, clock },
    options.remote,
  )

  // Programs and configures (docs/fpga.md): deployable-program.ts, reconfig-sweep.ts.
  const reconfigMs = options.reconfig?.timeoutMs ?? 2_400_000
  const programDeployable =
    deps.agentFor &&
    createDeployableProgram({
      db,
      committer,
      agentFor: deps.agentFor,
      programAgentFor: deps.reconfigAgentFor ?? deps.agentFor,
      syncPlacement: (host) => syncPlacement(host),
      log,
      now,
      uuid,
    })
  const configureDevice =
    deps.agentFor &&
    createDeviceConfigure({
      db,
      committer,
      agentFor: deps.agentFor,
      reconfigAgentFor: deps.reconfigAgentFor ?? deps.agentFor,
      placement: deps.placement?.client,
      syncPlacement: (host) => syncPlacement(host),
      log,
      now,
      uuid,
    })
  const reconfigSweep =
    deps.agentFor &&
    createReconfigSweep(
      {
        db,
        committer,
        agentFor: deps.agentFor,
        syncPlacement: (host) => syncPlacement(host),
        log,
        now,
        staleBefore: () => formatTimestamp(new Date(clock.now().getTime() - reconfigMs)),
      },
      options.reconfig,
    )

  const { bindTimeoutMs = 60_000 } = options
  const reapIntervalMs = options.reapIntervalMs ?? bindTimeoutMs / 4
  const reap = async () => {
    try {
      const releaseAttachments =
        v1Placement &&
        (async (uuids: string[]) => void (await Promise.all(uuids.map(v1Placement.release))))
      await reapStaleBinds({
        db,
        committer,
        nova: deps.nova,
        log,
        clock,
        bindTimeoutMs,
        reconcile: arqs.reconcileAllocations,
        releaseAttachments,
      })
      const finished = await arqs.finishStaleDeletes(
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
  const reaper = reapIntervalMs > 0 ? setInterval(() => void reap(), reapIntervalMs) : undefined
  reaper?.unref()

  const { serviceDownTimeMs, leaseSweepIntervalMs = 10_000 } = options
  const sweep = async (downMs: number) => {
    try {
      const fenced = await sweepLeases({ db, committer, log, clock, syncPlacement }, downMs)
      metrics.inc('cyborg_lease_sweeps_total', { outcome: 'ok' })
      if (fenced.length > 0) metrics.inc('cyborg_lease_fences_total', {}, fenced.length)
    } catch (err) {
      metrics.inc('cyborg_lease_sweeps_total', { outcome: 'error' })
      log.warn({ err }, 'lease sweep failed; next pass retries')
    }
  }
  let fleetRefreshMs = options.fleetRefreshMs ?? 30_000
  const fleetGauges = (intervalMs: number) =>
    deps.metrics &&
    startFleetGauges(
      {
        db: db.db,
        metrics: deps.metrics,
        log,
        leaseCutoff: () => leaseCutoff(clock, serviceDownTimeMs ?? 60_000),
      },
      intervalMs,
    )
  let stopFleetGauges = fleetGauges(fleetRefreshMs)
  const sweeper =
    serviceDownTimeMs === undefined
      ? undefined
      : setInterval(() => void sweep(serviceDownTimeMs), leaseSweepIntervalMs)
  sweeper?.unref()
  relay.start()
  sealer.start()
  cleaning?.start()
  reconfigSweep?.start()
  dispatcher?.start()
  const webhooks = createWebhookWrites({ committer, log, now, uuid })
  const placementReads = createPlacementExplain(deps.placement?.client)

  /** Every RPC method and the function that serves it (file in the comment). */
  const rpc: ConductorRpc = {
    reportInventory: ingest.reportInventory, // report-ingest.ts
    heartbeat: writes.heartbeat, // resource-writes.ts → heartbeat-batch.ts
    createDeviceProfile: writes.createDeviceProfile, // resource-writes.ts
    deleteDeviceProfiles: writes.deleteDeviceProfiles, // resource-writes.ts
    createAttribute: writes.createAttribute, // resource-writes.ts
    deleteAttribute: writes.deleteAttribute, // resource-writes.ts
    setDeviceStatus: writes.setDeviceStatus, // resource-writes.ts
    markDeviceReady: async (req) => (lifecycle ? lifecycle.markDeviceReady(req?.uuid) : noAgents()), // lifecycle.ts
    cleanDevice: async (req) => (cleaning ? cleaning.cleanDevice(req) : noAgents()), // unit-cleaning.ts
    programDeployable: async (req) => (programDeployable ?? noAgents)(req), // deployable-program.ts
    configureDevice: async (req) => (configureDevice ?? noAgents)(req), // device-configure.ts
    createArqs: arqs.createArqs, // arqs.ts
    bindArqs: arqs.bindArqs, // arqs.ts (claim: arq-claim.ts)
    unbindArqs: arqs.unbindArqs, // arqs.ts → arq-release.ts unbindOne
    deleteArqs: arqs.deleteArqs, // arqs.ts → arq-release.ts removeArqs
    attachAccelerator: v1.attachAccelerator, // v1-accelerators.ts
    detachAccelerator: v1.detachAccelerator, // v1-accelerators.ts
    setAcceleratorSpecs: v1.setAcceleratorSpecs, // v1-accelerators.ts
    listAgentDrivers: driverAdmin.listAgentDrivers, // driver-admin.ts
    installDriver: driverAdmin.installDriver, // driver-admin.ts
    uninstallDriver: driverAdmin.uninstallDriver, // driver-admin.ts
    updateDriver: driverAdmin.updateDriver, // driver-admin.ts
    discoverHosts: driverAdmin.discoverHosts, // driver-admin.ts
    registerRemoteAccelerator: remote.registerRemoteAccelerator, // remote-accelerators.ts
    createWebhook: webhooks.createWebhook, // webhooks.ts (delivery: webhook-sink.ts, webhook-dispatcher.ts)
    updateWebhook: webhooks.updateWebhook, // webhooks.ts
    deleteWebhook: webhooks.deleteWebhook, // webhooks.ts
    placementExplain: placementReads.placementExplain, // placement-explain.ts (reads Placement only)
  }

  return {
    ...rpc,
    async stop() {
      stopFleetGauges?.()
      clearInterval(reaper)
      clearInterval(sweeper)
      await cleaning?.stop()
      await reconfigSweep?.stop()
      await heartbeats?.close()
      await committer.close()
      await relay.stop()
      await sealer.stop()
      await dispatcher?.stop()
      log.info(committer.stats(), 'conductor stopped')
    },
    reconfigure(next) {
      if (next.webhooks) dispatcher?.reconfigure(next.webhooks)
      if (next.fleetRefreshMs !== undefined && next.fleetRefreshMs !== fleetRefreshMs) {
        fleetRefreshMs = next.fleetRefreshMs
        stopFleetGauges?.()
        stopFleetGauges = fleetGauges(fleetRefreshMs)
      }
    },
    stats: () => ({
      ...committer.stats(),
      ...(cleaning ? { cleaning: cleaning.stats() } : {}),
    }),
    drainEvents: () => relay.drain(),
    drainCustody: () => sealer.drain(),
    cleaningIdle: async () => cleaning?.idle(),
    sweepCleaning: async () => cleaning?.sweep() ?? 0,
    sweepReconfig: async () => reconfigSweep?.sweep() ?? 0,
    pruneCustody: () => sealer.prune(),
  }
}
