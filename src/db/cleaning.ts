/**
 * The `cleaning` state of attach handles (migration 0014; docs/cleaning.md). A release that must
 * clean keeps the handle `in_use` and sets `clean_state = pending` (`releaseAttachHandle`); the
 * conductor asks the host's agent to clean it (`claimCleanAttempt` stamps the ask, so that two
 * conductors do not ask at once and a silent agent is asked again later); `settleClean` ends it in
 * one transaction: the handle back in service (or `failed`, fenced), the custody ledger's clean or
 * override record, the device's health, and the events.
 */
import type { Kysely } from 'kysely'
import type { ReadDb } from './core/connection.js'
import type { Database } from './core/schema.js'
import { CustodyKind, type CustodyFields } from '../domain/custody/custody.js'
import { deviceCleanEvent, type NewEvent } from '../domain/events.js'
import {
  cleanLiftNeedsFailedUnits,
  healthAfterClean,
  type CleanHealthOutcome,
} from '../domain/health/clean.js'
import { appendFollowUpRecord } from './custody.js'
import { deviceFacts } from './outbox/device-events.js'
import { insertEvents } from './outbox/events.js'
import { applyHealthChange, healthStateOf } from './device-health.js'

export type CleanState = 'pending' | 'failed'

/** A unit out of service for its clean, with what the agent and the ledger need. */
export interface CleaningUnit {
  handleId: number
  handleUuid: string
  /** An MDEV unit's mdev uuid of the allocation it ended (migration 0018); null: `handleUuid`. */
  mdevUuid: string | null
  type: string
  info: Record<string, string>
  state: CleanState
  since: string | null
  attemptAt: string | null
  allocationUuid: string | null
  deployableUuid: string
  deviceId: number
  deviceUuid: string
  hostname: string
}

/** Units in `clean_state` (pending and failed by default), in handle id order. */
export async function listCleaningUnits(
  db: ReadDb,
  filter: {
    states?: readonly CleanState[]
    hostname?: string
    deviceUuid?: string
    handleIds?: readonly number[]
    /** Only units never asked, or last asked before this time. */
    attemptBefore?: string
    limit?: number
  } = {},
): Promise<CleaningUnit[]> {
  let q = db
    .selectFrom('attach_handles as h')
    .innerJoin('deployables as d', 'd.id', 'h.deployable_id')
    .innerJoin('devices as dev', 'dev.id', 'd.device_id')
    .select([
      'h.id',
      'h.uuid',
      'h.mdev_uuid',
      'h.attach_type',
      'h.attach_info',
      'h.clean_state',
      'h.clean_since',
      'h.clean_attempt_at',
      'h.clean_allocation_uuid',
      'd.uuid as deployable_uuid',
      'dev.id as device_id',
      'dev.uuid as device_uuid',
      'dev.hostname',
    ])
    .where('h.clean_state', 'in', [...(filter.states ?? ['pending', 'failed'])])
  if (filter.hostname !== undefined) q = q.where('dev.hostname', '=', filter.hostname)
  if (filter.deviceUuid !== undefined) q = q.where('dev.uuid', '=', filter.deviceUuid)
  if (filter.handleIds !== undefined) {
    if (filter.handleIds.length === 0) return []
    q = q.where('h.id', 'in', [...filter.handleIds])
  }
  if (filter.attemptBefore !== undefined) {
    const before = filter.attemptBefore
    q = q.where((eb) =>
      eb.or([eb('h.clean_attempt_at', 'is', null), eb('h.clean_attempt_at', '<', before)]),
    )
  }
  const rows = await q
    .orderBy('h.id')
    .limit(filter.limit ?? 1000)
    .execute()
  return rows.map((r) => ({
    handleId: r.id,
    handleUuid: r.uuid,
    mdevUuid: r.mdev_uuid,
    type: r.attach_type,
    info: JSON.parse(r.attach_info) as Record<string, string>,
    state: r.clean_state as CleanState,
    since: r.clean_since,
    attemptAt: r.clean_attempt_at,
    allocationUuid: r.clean_allocation_uuid,
    deployableUuid: r.deployable_uuid,
    deviceId: r.device_id,
    deviceUuid: r.device_uuid,
    hostname: r.hostname,
  }))
}

/**
 * Stamps that a conductor asks the agent to clean the unit now; false when it is not pending, or
 * another ask is more recent than `staleBefore` (in flight elsewhere).
 */
export async function claimCleanAttempt(
  db: Kysely<Database>,
  handleId: number,
  options: { now: string; staleBefore: string },
): Promise<boolean> {
  const res = await db
    .updateTable('attach_handles')
    .set({ clean_attempt_at: options.now })
    .where('id', '=', handleId)
    .where('clean_state', '=', 'pending')
    .where((eb) =>
      eb.or([eb('clean_attempt_at', 'is', null), eb('clean_attempt_at', '<', options.staleBefore)]),
    )
    .executeTakeFirst()
  return Number(res.numUpdatedRows) === 1
}

/**
 * An operator's `cyborg device clean`: the device's failed and pending units become pending and
 * unasked, so that the next ask goes at once. Returns how many.
 */
export async function requestCleanNow(db: Kysely<Database>, deviceUuid: string): Promise<number> {
  const ids = (await listCleaningUnits(db, { deviceUuid })).map((u) => u.handleId)
  if (ids.length === 0) return 0
  const res = await db
    .updateTable('attach_handles')
    .set({ clean_state: 'pending', clean_attempt_at: null })
    .where('id', 'in', ids)
    .where('clean_state', 'is not', null)
    .executeTakeFirst()
  return Number(res.numUpdatedRows)
}

/** What a clean's health decision reads of its outcome. */
export function cleanHealthOutcome(outcome: CleanSettlement): CleanHealthOutcome {
  return outcome.kind === 'failed' ? { failed: true, reason: outcome.reason } : { failed: false }
}

/** How a clean ended. */
export type CleanSettlement =
  | { kind: 'cleaned'; method: string; result: 'ok' | 'skipped'; evidenceSha256: string }
  | { kind: 'failed'; method: string | null; reason: string }
  | {
      kind: 'override'
      reason: string
      userId: string | null
      projectId: string | null
      /** True when the host's agent stopped a clean that was running (AgentRpc 1.7 abortClean). */
      cleanAborted?: boolean
    }

/**
 * Ends `unit`'s clean, if it is still in `clean_state` (a concurrent settle wins once): cleaned or
 * override → in service; failed → `failed`, and the device `failed` with reason `clean failed: …`
 * (lifted again by a later clean or override). Appends the custody record and writes the events.
 * Returns the record's uuid, or undefined when the unit was no longer cleaning.
 */
export async function settleClean(
  db: Kysely<Database>,
  unit: CleaningUnit,
  outcome: CleanSettlement,
  options: { now: string; recordUuid: string },
): Promise<string | undefined> {
  if (!(await closeClean(db, unit, outcome, options.now))) return undefined
  await finishClean(db, unit, outcome, options)
  return options.recordUuid
}

/**
 * The first statement of a settle: ends `unit`'s clean state if it is still the release it was
 * read for (pending, or failed too for an override). False when it was not (nothing written).
 */
export async function closeClean(
  db: Kysely<Database>,
  unit: CleaningUnit,
  outcome: CleanSettlement,
  now: string,
): Promise<boolean> {
  const failed = outcome.kind === 'failed'
  const update = db
    .updateTable('attach_handles')
    .set(
      failed
        ? { clean_state: 'failed', updated_at: now }
        : {
            in_use: 0,
            clean_state: null,
            clean_since: null,
            clean_attempt_at: null,
            clean_allocation_uuid: null,
            updated_at: now,
          },
    )
    .where('id', '=', unit.handleId)
    // Only the release `unit` was read for: an answer that crosses a later release (the unit put
    // back, bound and released again meanwhile) must not close that one.
    .where((eb) =>
      unit.allocationUuid === null
        ? eb.and([eb('clean_allocation_uuid', 'is', null), eb('clean_since', '=', unit.since)])
        : eb('clean_allocation_uuid', '=', unit.allocationUuid),
    )
  // An override ends a pending or a failed clean; an agent's answer only a pending one.
  const res = await (
    outcome.kind === 'override'
      ? update.where('clean_state', 'is not', null)
      : update.where('clean_state', '=', 'pending')
  ).executeTakeFirst()
  return Number(res.numUpdatedRows) === 1
}

/** The rest of a settle once `closeClean` did: the record, the device's health, the event. */
async function finishClean(
  db: Kysely<Database>,
  unit: CleaningUnit,
  outcome: CleanSettlement,
  options: { now: string; recordUuid: string },
): Promise<void> {
  const { now } = options
  const failed = outcome.kind === 'failed'
  // The clean belongs to the interval's tenant: it carries the interval's project and instance.
  await appendFollowUpRecord(db, custodyRecord(unit, outcome, options))

  // Load → decide (src/domain/health/clean.ts) → apply (device-health.ts).
  const device = await db
    .selectFrom('devices')
    .selectAll()
    .where('id', '=', unit.deviceId)
    .executeTakeFirstOrThrow()
  const cur = healthStateOf(device)
  const health = cleanHealthOutcome(outcome)
  const failedUnitsLeft = cleanLiftNeedsFailedUnits(cur, health)
    ? (await listCleaningUnits(db, { deviceUuid: unit.deviceUuid, states: ['failed'] })).length
    : undefined
  const change = healthAfterClean(cur, health, failedUnitsLeft)
  if (change !== undefined) await applyHealthChange(db, unit.hostname, change, now)
  const saved =
    change !== undefined || failed
      ? await db
          .selectFrom('devices')
          .selectAll()
          .where('id', '=', unit.deviceId)
          .executeTakeFirstOrThrow()
      : device
  await insertEvents(db, [cleanEvent(unit, outcome, saved, options)])
}

/** The `accelerator.device.<cleaned|clean_failed|clean_overridden>` event of a settle. */
export function cleanEvent(
  unit: CleaningUnit,
  outcome: CleanSettlement,
  device: Parameters<typeof deviceFacts>[0],
  options: { now: string; recordUuid: string },
): NewEvent {
  const failed = outcome.kind === 'failed'
  const action = failed
    ? 'clean_failed'
    : outcome.kind === 'override'
      ? 'clean_overridden'
      : 'cleaned'
  return deviceCleanEvent(
    action,
    deviceFacts(device),
    {
      handleUuid: unit.handleUuid,
      deployableUuid: unit.deployableUuid,
      method: outcome.kind === 'override' ? null : outcome.method,
      result: failed ? 'failed' : outcome.kind === 'override' ? 'override' : outcome.result,
      evidenceSha256: outcome.kind === 'cleaned' ? outcome.evidenceSha256 : null,
      reason: outcome.kind === 'cleaned' ? null : outcome.reason,
      allocationRecordUuid: unit.allocationUuid,
      cleanRecordUuid: options.recordUuid,
    },
    options.now,
  )
}

/** The custody record of a settle (a `clean`, or an `override`), following its interval. */
export function custodyRecord(
  unit: CleaningUnit,
  outcome: CleanSettlement,
  options: { now: string; recordUuid: string },
): Omit<CustodyFields, 'projectId' | 'instanceUuid' | 'deviceSerial'> {
  const override = outcome.kind === 'override'
  // An override's operator: `user_id`, and their project in `detail` (project_id is the tenant's);
  // `clean_aborted` when the agent stopped a running clean before the unit went back (issue 27).
  const detail =
    outcome.kind === 'cleaned'
      ? null
      : JSON.stringify(
          override
            ? {
                reason: outcome.reason,
                by_project_id: outcome.projectId,
                ...(outcome.cleanAborted === undefined
                  ? {}
                  : { clean_aborted: outcome.cleanAborted }),
              }
            : { reason: outcome.reason },
        )
  return {
    uuid: options.recordUuid,
    kind: override ? CustodyKind.Override : CustodyKind.Clean,
    allocationUuid: unit.allocationUuid,
    arqUuid: null,
    deviceUuid: unit.deviceUuid,
    deployableUuid: unit.deployableUuid,
    handleUuid: unit.handleUuid,
    hostname: unit.hostname,
    userId: override ? outcome.userId : null,
    allocatedVia: null,
    boundAt: null,
    releasedAt: unit.since,
    cleanMethod: override ? null : outcome.method,
    cleanResult: override ? 'override' : outcome.kind === 'failed' ? 'failed' : outcome.result,
    cleanEvidenceSha256: outcome.kind === 'cleaned' ? outcome.evidenceSha256 : null,
    cleanedAt: override ? null : options.now,
    detail,
    createdAt: options.now,
  }
}
