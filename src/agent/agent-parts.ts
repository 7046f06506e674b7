/**
 * The parts the agent (agent.ts) is wired from: device operations, driver administration, the
 * driver listing, remote registrations, unit cleaning and device re-partitioning, each over the
 * agent's cache, log and stop signal; and the AgentRpc handler table that serves them.
 */
import { DriverError } from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'
import type { CleanRunner } from '../drivers/driver.js'
import type { AgentRpc } from '../rpc/agent-rpc.js'
import type { InventoryReportResult } from '../rpc/conductor-rpc.js'
import type { AgentCache, AgentDeps } from './agent-types.js'
import { createUnitCleaner } from './cleaning.js'
import { createDeviceConfigurer } from './device-configure.js'
import { createDeviceOps } from './device-ops.js'
import { createDriverAdmin } from './driver-admin.js'
import { createDriverListing } from './driver-list.js'
import { createFpgaImages } from './fpga-images.js'
import { createRemoteRegistry } from './remote-registry.js'

/** Without `deps.runClean` this agent cannot clean: every clean is refused (CLEAN_UNSUPPORTED). */
const noCleaner: CleanRunner = () =>
  Promise.reject(
    new DriverError('this agent was started without a clean runner', { code: 'CLEAN_UNSUPPORTED' }),
  )

/** What the parts share with the agent. */
export interface AgentPartsContext {
  host: string
  version: string
  cache: AgentCache
  log: Logger
  /** Aborted when the agent stops. */
  signal: AbortSignal
  /** The agent's serialized discovery and report. */
  rediscover(): Promise<InventoryReportResult>
}

export type AgentParts = ReturnType<typeof createAgentParts>

export function createAgentParts(deps: AgentDeps, ctx: AgentPartsContext) {
  const { drivers } = deps
  const { host, cache, log, signal, rediscover } = ctx
  const deviceOps = createDeviceOps({ host: deps.hostProbe, log })
  const admin = createDriverAdmin({
    drivers,
    registry: deps.driverRegistry,
    baseOptions: deps.driverOptions ?? {},
    driverDeps: deps.hostProbe && { host: deps.hostProbe, hostname: host },
    store: {
      load: async () => cache.driverSettings?.(),
      save: async (settings) => cache.saveDriverSettings?.(settings),
    },
    rediscover,
    log,
  })
  const listing = createDriverListing({
    host,
    version: ctx.version,
    names: drivers.map((d) => d.name),
    aliases: deps.driverRegistry.aliases,
    enabled: async () => {
      await admin.ready()
      return admin.enabled().map((d) => d.name)
    },
  })
  const remote = createRemoteRegistry({
    store: {
      load: async () => cache.remoteAccelerators?.(),
      save: async (list) => cache.saveRemoteAccelerators?.(list),
    },
    enabled: () => admin.enabled(),
    ready: () => admin.ready(),
    rediscover,
    log,
  })
  const cleaner = createUnitCleaner({
    owner: admin.owner,
    runClean: deps.runClean ?? noCleaner,
    signal,
    log,
  })
  const configurer = createDeviceConfigurer({
    owner: admin.owner,
    updateDriverOptions: admin.updateDriverOptions,
    rediscover,
    freshReads: deps.beforeDiscovery,
    signal,
    log,
  })
  return { deviceOps, admin, listing, remote, cleaner, configurer }
}

/** The AgentRpc the agent serves on the bus (FPGA images are made here, at start). */
export function agentHandlers(
  parts: AgentParts,
  deps: Pick<AgentDeps, 'images'>,
  ctx: Pick<AgentPartsContext, 'log' | 'rediscover'>,
): AgentRpc {
  const { deviceOps, admin, listing, remote, cleaner, configurer } = parts
  const images = createFpgaImages({
    images: deps.images,
    program: (req) => admin.programFpga(req),
    log: ctx.log,
  })
  return {
    discover: () => ctx.rediscover(),
    ...deviceOps,
    ...admin,
    ...images,
    listDrivers: () => listing.listDrivers(),
    registerRemote: (req) => remote.registerRemote(req),
    cleanUnit: (req) => cleaner.cleanUnit(req),
    cleanUnits: (req) => cleaner.cleanUnits(req),
    abortClean: (req) => cleaner.abortClean(req),
    configureDevice: (req) => configurer.configureDevice(req),
  }
}
