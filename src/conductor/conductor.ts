/**
 * The conductor (seed 002): the single writer. Every write goes through one group committer, so
 * writes that arrive together share one transaction (the "save out rate" of the seed), and every
 * input is re-checked before it reaches the database.
 *
 * This file wires the services and lists, one line each, which function serves each RPC method
 * (the `rpc` table below); the flows live in the files it names.
 */
import type { ConductorRpc } from '../rpc/conductor-rpc.js'
import { createLifecycle } from './lifecycle.js'
import { UnavailableError } from '../domain/errors.js'
import { createRemoteAcceleratorService } from './remote-accelerators.js'
import { createDriverAdminService } from './driver-admin.js'
import { startReaper } from './arq/arq-reaper.js'
import { createReportIngest } from './report-ingest.js'
import { createResourceWrites } from './resource-writes.js'
import { createHeartbeatBatcher } from './heartbeat-batch.js'
import { leaseCutoff, startLeaseSweep } from './lease-sweep.js'
import { createFleetGauges } from './fleet-metrics.js'
import { noopMetrics } from '../domain/metrics.js'
import { createWebhookWrites } from './outbox/webhooks.js'
import { createPlacementExplain } from './placement-explain.js'
import { newUuid } from '../domain/ids.js'
import { formatTimestamp } from '../domain/time.js'
import type { Conductor, ConductorDeps, ConductorOptions } from './conductor-types.js'
import {
  createCommitPath,
  wireArqs,
  wireCleaning,
  wirePlacement,
  wireReconfig,
} from './conductor-wiring.js'

export type { Conductor, ConductorDeps, ConductorOptions } from './conductor-types.js'

export function createConductor(deps: ConductorDeps, options: ConductorOptions = {}): Conductor {
  const { db, clock, uuid = newUuid } = deps
  const log = deps.log.child({ component: 'conductor' })
  const metrics = deps.metrics ?? noopMetrics
  const now = () => formatTimestamp(clock.now())
  const w = { db, clock, uuid, log, now }
  // The group committer; events and custody records are written with the changes (conductor-wiring.ts).
  const commitPath = createCommitPath(deps, options, { ...w, metrics })
  const { committer, relay, sealer, dispatcher } = commitPath
  const { placement, syncPlacement } = wirePlacement(deps, options, { ...w, committer })

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
  const cleaning = wireCleaning(deps, options, { ...w, committer, syncPlacement })

  const { v1Placement, arqs, v1 } = wireArqs(deps, options, { ...w, committer, cleaner: cleaning })
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
  const remote = createRemoteAcceleratorService(
    { db, agentFor: deps.agentFor, uuid, log, clock },
    options.remote,
  )
  const { programDeployable, configureDevice, reconfigSweep } = wireReconfig(deps, options, {
    ...w,
    committer,
    syncPlacement,
  })

  // The timers: the stale-bind reaper (arq-reaper.ts), the fleet gauges (fleet-metrics.ts), the lease sweep (lease-sweep.ts).
  const { bindTimeoutMs = 60_000, serviceDownTimeMs, leaseSweepIntervalMs = 10_000 } = options
  const { reconcileAllocations: reconcile, finishStaleDeletes } = arqs
  const reaper = { db, committer, log, clock, bindTimeoutMs, v1Placement, nova: deps.nova }
  const reapMs = options.reapIntervalMs ?? bindTimeoutMs / 4
  const stopReaper = startReaper({ ...reaper, reconcile, finishStaleDeletes }, reapMs)
  const leaseCutoffNow = () => leaseCutoff(clock, serviceDownTimeMs ?? 60_000)
  const fleet = createFleetGauges(
    { db: db.db, metrics: deps.metrics, log, leaseCutoff: leaseCutoffNow },
    options.fleetRefreshMs ?? 30_000,
  )
  const stopSweeper = startLeaseSweep(
    { db, committer, log, clock, syncPlacement, metrics },
    serviceDownTimeMs,
    leaseSweepIntervalMs,
  )
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
    cleanDevice: async (req) => (cleaning ? cleaning.cleanDevice(req) : noAgents()), // cleaning/cleaning.ts
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
      fleet.stop()
      stopReaper()
      stopSweeper()
      placement?.stop()
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
      if (next.fleetRefreshMs !== undefined) fleet.reconfigure(next.fleetRefreshMs)
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
