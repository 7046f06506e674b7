/**
 * One report of the agent's loop (agent.ts): discover with every enabled driver, record each
 * driver's outcome, build the snapshot and send it to the conductor, or only confirm its hash by
 * heartbeat when the conductor already holds it. A failing driver stops the report (DISCOVERY_FAILED):
 * a report without its devices would delete them. The snapshot is saved in the cache before it is
 * sent and acknowledged there once the conductor answers; a failing cache is logged, never fatal.
 */
import type { Metrics } from '../domain/metrics.js'
import { DriverError } from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'
import type { Clock } from '../domain/time.js'
import type { ConductorRpc, InventoryReportResult } from '../rpc/conductor-rpc.js'
import type { AgentCache, AgentOptions, DriverState } from './agent-types.js'
import type { DriverAdmin } from './driver-admin.js'
import type { DriverListing } from './driver-list.js'
import type { RemoteRegistry } from './remote-registry.js'
import { buildSnapshot, discoverAll, type DriverFailure, type DriverRun } from './snapshot.js'

/** The binary name agents heartbeat under. */
export const AGENT_BINARY = 'cyborg-agent'

/** What the report loop remembers between reports. */
export interface ReportMemo {
  /** The hash of the last report the conductor accepted in full, as far as this process knows. */
  accepted?: string | undefined
  /** Whether this period's heartbeat went out already (carrying the inventory hash). */
  beat: boolean
  /** The runs of the last discovery, for telemetry. */
  lastRuns?: DriverRun[] | undefined
}

/** Where a report goes, and what sends it: the conductor, its heartbeat identity and the report flags. */
export interface ConductorLink {
  conductor: Pick<ConductorRpc, 'heartbeat' | 'reportInventory'>
  host: string
  version: string
  autoActivate: boolean
  /** The compute node provider the devices hang under, when resolved. */
  placementRoot: { resourceProvider?: AgentOptions['resourceProvider'] }
  cache: AgentCache
  metrics: Metrics
  log: Logger
}

export interface ReportDeps extends ConductorLink {
  admin: Pick<DriverAdmin, 'ready' | 'enabled' | 'recordDiscovery'>
  remote: Pick<RemoteRegistry, 'feed'>
  listing: Pick<DriverListing, 'record'>
  clock: Clock
  /** Called before each discovery (forget cached host reads). */
  beforeDiscovery?: (() => void) | undefined
  /** Aborted when the agent stops. */
  signal: AbortSignal
  discoverTimeoutMs: number
  memo: ReportMemo
}

/** Runs a cache call; a failing cache is logged, never fatal. */
export async function cached(
  log: Logger,
  what: string,
  fn: () => Promise<void> | undefined,
): Promise<void> {
  try {
    await fn()
  } catch (err) {
    log.warn({ err }, `agent cache: ${what} failed; continuing without it`)
  }
}

/** Heartbeats with `hash`: true when the conductor still holds it (never from a conductor older than 1.2). */
export async function confirmHash(
  deps: Pick<ConductorLink, 'conductor' | 'host' | 'version'> & { memo: ReportMemo },
  hash: string,
): Promise<boolean> {
  const { conductor, host, version } = deps
  const answer = await conductor.heartbeat({
    host,
    binary: AGENT_BINARY,
    version,
    inventoryHash: hash,
  })
  deps.memo.beat = true
  return answer?.inventoryCurrent === true
}

/** The error of a discovery in which some drivers failed, naming each. */
export function discoveryFailed(failures: readonly DriverFailure[]): DriverError {
  const names = failures.map((f) => f.driver).join(', ')
  return new DriverError(
    `discovery failed for ${names}; not reporting, so that their devices are kept`,
    {
      code: 'DISCOVERY_FAILED',
      details: {
        failures: failures.map((f) => ({
          driver: f.driver,
          code: f.error.code,
          message: f.error.message,
        })),
      },
    },
  )
}

/** Each run's outcome at `at`, with its driver's error when it failed. */
export function driverStates(
  runs: readonly DriverRun[],
  failures: readonly DriverFailure[],
  at: string,
): DriverState[] {
  return runs.map((run) => {
    const error = failures.find((f) => f.driver === run.driver)?.error
    return {
      ...run,
      at,
      ...(error ? { error: { code: error.code, message: error.message } } : {}),
    }
  })
}

/**
 * Discovers and reports once.
 * @throws DriverError DISCOVERY_FAILED when a driver failed (nothing is reported then); the
 *   conductor's error when the report fails
 */
export async function reportOnce(deps: ReportDeps): Promise<InventoryReportResult> {
  const { admin, cache, metrics, log, memo } = deps
  await admin.ready()
  await deps.remote.feed()
  deps.beforeDiscovery?.()
  const { devices, failures, runs, byDriver } = await discoverAll(admin.enabled(), {
    signal: deps.signal,
    timeoutMs: deps.discoverTimeoutMs,
  })
  admin.recordDiscovery(byDriver)
  memo.lastRuns = runs
  for (const run of runs) {
    const labels = { driver: run.driver, outcome: run.ok ? 'ok' : 'error' }
    metrics.observe('cyborg_discovery_duration_seconds', run.durationMs / 1000, labels)
  }
  const states = driverStates(runs, failures, deps.clock.now().toISOString())
  deps.listing.record(states)
  await cached(log, 'saving driver states', () => cache.saveDriverStates?.(states))
  if (failures.length > 0) {
    for (const { driver, error } of failures)
      log.warn({ driver, err: error }, 'driver discovery failed')
    throw discoveryFailed(failures)
  }
  const snapshot = buildSnapshot(deps.host, devices)
  // Nothing changed since the conductor's last answer: confirm the hash instead of resending it all.
  if (snapshot.hash === memo.accepted && (await confirmHash(deps, snapshot.hash))) {
    metrics.inc('cyborg_reports_total', { result: 'skipped' })
    log.debug({ hash: snapshot.hash }, 'inventory unchanged (confirmed)')
    return { changed: false, added: 0, updated: 0, removed: 0, pending: 0 }
  }
  await cached(log, 'saving the snapshot', () => cache.saveSnapshot(snapshot))
  const result = await deps.conductor
    .reportInventory({ ...snapshot, autoActivate: deps.autoActivate, ...deps.placementRoot })
    .catch((err: unknown) => {
      metrics.inc('cyborg_reports_total', { result: 'failed' })
      throw err
    })
  metrics.inc('cyborg_reports_total', { result: 'sent' })
  memo.accepted = result.pending === 0 ? snapshot.hash : undefined
  await cached(log, 'acknowledging the snapshot', () => cache.acknowledge(snapshot, result))
  if (result.changed) log.info({ ...result, hash: snapshot.hash }, 'inventory reported')
  else log.debug({ hash: snapshot.hash }, 'inventory unchanged')
  return result
}
