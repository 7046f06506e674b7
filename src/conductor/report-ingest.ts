/**
 * Report ingestion: an agent's inventory report becomes rows. The flow is
 * conductor → db (load the host's rows) → domain (diff them with the snapshot) → db (apply the
 * diff), in one write transaction of the group committer; then Placement is brought in step.
 *
 * - An unchanged report (same hash as stored) costs one read and no write.
 * - The stored hash is kept only when nothing is left to do; otherwise it is cleared, so that the
 *   host's next report (changed or not) tries again.
 * - A report racing another conductor's identical write (a unique violation) is diffed again
 *   against what that one wrote.
 */
import type { DatabaseHandle } from '../db/core/connection.js'
import { isUniqueViolation } from '../db/core/errors.js'
import type { GroupCommitter, WriteTrx } from '../db/core/group-commit.js'
import {
  getHostInventory,
  updateHostInventory,
  type InventoryWriteOptions,
} from '../db/host-inventory.js'
import { getReportHash, updateReportHash } from '../db/service-rows.js'
import { listDeviceIdentities } from '../db/device-identities.js'
import type { InventorySnapshot } from '../domain/inventory/inventory.js'
import type { Logger } from '../domain/logger.js'
import type { ConductorRpc, InventoryReportResult } from '../rpc/conductor-rpc.js'
import type { HealthTransition } from '../db/health-transitions.js'
import { isFencedHealth } from '../domain/health/report.js'
import { leaseRegained as leaseRegainedBy } from '../domain/health/lease.js'
import type { RootHint } from './placement/placement-sync.js'
import { checkSnapshot } from './validate.js'
import { diffInventory } from '../domain/inventory/inventory-diff.js'

/** What one ingestion changed. */
export interface IngestCounts {
  added: number
  updated: number
  removed: number
  /** Deployables missing from the report but kept (removal_pending) because something holds them. */
  pending: number
}

/** An ingestion's counts, with what it did to health. */
export interface IngestResult extends IngestCounts {
  /** Health transitions recorded (to log once). */
  transitions: HealthTransition[]
  /** Devices still fenced by damping: the hash must not be kept. */
  recovering: number
}

/** Load → diff → apply of one host's full snapshot, inside the caller's transaction. */
export async function ingestSnapshot(
  trx: WriteTrx,
  snapshot: InventorySnapshot,
  options: InventoryWriteOptions & { recoveryReports?: number },
): Promise<IngestResult> {
  const current = await getHostInventory(trx, snapshot.host)
  const known = await listDeviceIdentities(trx, snapshot.host)
  const { recoveryReports } = options
  const diff = diffInventory(snapshot.host, current, snapshot.devices, recoveryReports, known)
  // A device leaving a lease fence's `unknown`: the agent regained its lease (one event per host).
  const leaseRegained = leaseRegainedBy(current, diff.healthChanges)
  const write = { ...options, leaseRegained }
  const transitions = await updateHostInventory(trx, snapshot.host, diff, write)
  return { ...diff.counts, transitions, recovering: diff.recovering }
}

/** Logs each health transition once: a warning for a fence, info otherwise (a recovery). */
export function logHealthTransitions(log: Logger, transitions: readonly HealthTransition[]): void {
  for (const t of transitions) {
    const fields = { device: t.deviceUuid, host: t.hostname, from: t.from, to: t.to }
    const why = t.reason === null ? '' : `: ${t.reason}`
    if (isFencedHealth(t.to)) log.warn(fields, `device fenced (health ${t.to})${why}`)
    else if (t.from !== 'new' && isFencedHealth(t.from))
      log.info(fields, `device offered again (health ${t.to})${why}`)
    else log.info(fields, `device health ${t.to}${why}`)
  }
}

export interface ReportIngestDeps {
  db: DatabaseHandle
  committer: Pick<GroupCommitter, 'run'>
  log: Logger
  now: () => string
  /** `[conductor] health_recovery_reports`: healthy reports before a fenced device is offered. @default 1 */
  recoveryReports?: number
  /** Brings Placement in step with a host; absent in embedded mode (conductor.ts's syncPlacement). */
  syncPlacement?: (host: string, root?: RootHint) => Promise<{ complete: boolean; deleted: number }>
}

/** Runs `apply`; when another conductor wrote the same host's rows first, diffs again against them. */
async function applyOnce<T>(apply: () => Promise<T>, log: Logger): Promise<T> {
  try {
    return await apply()
  } catch (err) {
    const raced = isUniqueViolation(err) || isUniqueViolation((err as { cause?: unknown }).cause)
    if (!raced) throw err
    log.debug({ err }, 'another conductor wrote this host meanwhile; diffing again')
    return apply()
  }
}

const countsOf = ({ added, updated, removed, pending }: IngestCounts): IngestCounts => ({
  added,
  updated,
  removed,
  pending,
})

/** The conductor's `reportInventory`. */
export function createReportIngest(deps: ReportIngestDeps): Pick<ConductorRpc, 'reportInventory'> {
  const { db, committer, log, now, syncPlacement, recoveryReports } = deps
  return {
    async reportInventory(req): Promise<InventoryReportResult> {
      checkSnapshot(req)
      const { host, hash, devices, autoActivate, resourceProvider } = req
      const unchanged = { changed: false, added: 0, updated: 0, removed: 0, pending: 0 }
      // The common case, an unchanged inventory, costs one read and no write at all.
      if ((await getReportHash(db.db, host)) === hash) return unchanged
      const snapshot = { host, hash, devices }
      /** Diffs the snapshot in; the hash is kept only when nothing is left to do (else: null, retry). */
      const apply = (keepHash: boolean, skipIfCurrent = false) =>
        committer.run(async (trx) => {
          // A concurrent identical report may have landed while this one waited for its batch.
          if (skipIfCurrent && (await getReportHash(trx, host)) === hash) return undefined
          const at = now()
          const options = { autoActivate, now: at, recoveryReports }
          const ingested = await ingestSnapshot(trx, snapshot, options)
          const done = keepHash && ingested.pending === 0 && ingested.recovering === 0
          await updateReportHash(trx, host, done ? hash : null, at)
          return ingested
        })
      const first = await applyOnce(() => apply(!syncPlacement, true), log)
      if (!first) return unchanged
      // Logged once committed, before Placement is brought in step (which may take a while).
      logHealthTransitions(log, first.transitions)
      let counts: IngestCounts = countsOf(first)
      if (syncPlacement) {
        const synced = await syncPlacement(host, resourceProvider)
        // Providers deleted from Placement free their pending rows: diff again to remove them.
        if (synced.complete || synced.deleted > 0) {
          const again = (await apply(synced.complete))!
          logHealthTransitions(log, again.transitions)
          counts = { ...counts, removed: counts.removed + again.removed, pending: again.pending }
        }
      }
      const result = { changed: true, ...counts }
      log.info({ host, hash, ...result }, 'inventory changed')
      return result
    },
  }
}
