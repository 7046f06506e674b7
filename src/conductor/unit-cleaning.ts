/**
 * Clean before reuse, the conductor's part (issue 18; docs/cleaning.md). A release leaves its
 * handle `cleaning` (src/db/attach-handles.ts); here the conductor:
 *
 * 1. brings Placement in step with the host (the unit shows reserved), then asks the host's agent
 *    to clean the unit (`cleanUnit`, AgentRpc 1.5); the ask is stamped in the database (by the
 *    release itself for the first ask, else by `claimCleanAttempt` first);
 * 2. settles the answer in one transaction (src/db/handle-cleaning.ts): cleaned → back in service;
 *    a refusal or failure (CLEAN_UNSUPPORTED, CLEAN_FAILED, VERIFY_FAILED, CLEAN_TIMEOUT, the unit
 *    gone from the host) → `failed`, the device fenced (health `failed`, `clean failed: …`); each
 *    with its custody record and event; then syncs Placement again;
 * 3. anything else (the agent silent or restarting, CLEAN_BUSY, CLEAN_ABORTED, an agent too old)
 *    leaves the unit `cleaning`: the sweep asks again once the last ask is older than
 *    `[conductor] clean_retry_interval`, whichever conductor runs it, after any crash. A unit is
 *    never offered again before its agent has answered that it is clean (the release fence).
 *
 * Operators: `cleanDevice` re-runs the clean of a device's failed or pending units by hand, or with
 * `force` puts them back in service without one, recorded as an override with who asked.
 */
import type { DatabaseHandle } from '../db/connection.js'
import type { GroupCommitter } from '../db/group-commit.js'
import {
  claimCleanAttempt,
  listCleaningUnits,
  requestCleanNow,
  settleClean,
  type CleanSettlement,
  type CleaningUnit,
} from '../db/handle-cleaning.js'
import { getDeviceFacts } from '../db/device-events.js'
import { AppError, NotFoundError } from '../domain/errors.js'
import { errorMessage } from '../domain/error-message.js'
import { newUuid } from '../domain/ids.js'
import type { Logger } from '../domain/logger.js'
import { formatTimestamp, type Clock } from '../domain/time.js'
import type { AgentRpc, CleanUnitResult } from '../rpc/agent-rpc.js'
import type { DeviceCleanOutcome } from '../rpc/conductor-rpc.js'
import { checkDeviceClean } from './validate.js'

/** Codes after which a clean is not retried: the unit is failed and fenced. */
const FINAL_CODES = new Set([
  'CLEAN_UNSUPPORTED',
  'CLEAN_FAILED',
  'VERIFY_FAILED',
  'CLEAN_TIMEOUT',
  'CLEAN_TARGET_INVALID',
  'UNIT_NOT_ON_HOST',
])

export interface UnitCleaningDeps {
  db: DatabaseHandle
  committer: Pick<GroupCommitter, 'run'>
  /** The host's agent; an ask's time limit is the composition root's (two retry intervals). */
  agentFor: (host: string) => Pick<AgentRpc, 'cleanUnit'>
  /** Brings Placement in step with a host (the conductor's; a no-op without Placement). */
  syncPlacement: (host: string) => Promise<unknown>
  log: Logger
  clock: Clock
  uuid?: () => string
}

export interface UnitCleaningOptions {
  /** `[conductor] clean_retry_interval` in ms: a unit still cleaning is asked again after it. @default 60000 */
  retryIntervalMs?: number
  /** How often the sweep looks for units to ask again; 0 for never. @default retryIntervalMs / 2 */
  sweepIntervalMs?: number
}

export interface UnitCleaning {
  /** Starts the clean of handles a release has just left `cleaning` (release deps' `cleaner`). */
  cleanReleased(handleIds: readonly number[]): void
  /** One sweep: asks again for units whose last ask is older than the retry interval. */
  sweep(): Promise<number>
  /** Re-runs (or with `force`, skips) the clean of a device's units. @throws NotFoundError */
  cleanDevice(req: unknown): Promise<DeviceCleanOutcome>
  /** Resolves once every clean this conductor started has settled (tests, shutdown). */
  idle(): Promise<void>
  start(): void
  stop(): Promise<void>
}

export function createUnitCleaning(
  deps: UnitCleaningDeps,
  options: UnitCleaningOptions = {},
): UnitCleaning {
  const { db, committer, agentFor, syncPlacement, clock, uuid = newUuid } = deps
  const log = deps.log.child({ component: 'cleaning' })
  const retryMs = options.retryIntervalMs ?? 60_000
  const sweepMs = options.sweepIntervalMs ?? retryMs / 2
  const now = () => formatTimestamp(clock.now())
  const staleBefore = () => formatTimestamp(new Date(clock.now().getTime() - retryMs))
  const running = new Set<Promise<unknown>>()
  let timer: NodeJS.Timeout | undefined
  let stopped = false

  const track = (p: Promise<unknown>) => {
    running.add(p)
    void p.finally(() => running.delete(p))
  }

  const settle = async (unit: CleaningUnit, outcome: CleanSettlement) => {
    const record = await committer.run((trx) =>
      settleClean(trx, unit, outcome, { now: now(), recordUuid: uuid() }),
    )
    if (record === undefined) return
    if (outcome.kind === 'failed')
      log.error(
        {
          handle: unit.handleUuid,
          device: unit.deviceUuid,
          host: unit.hostname,
          reason: outcome.reason,
        },
        'clean failed: the unit stays out of service and its device is fenced',
      )
    else log.info({ handle: unit.handleUuid, kind: outcome.kind }, 'unit back in service')
    await syncPlacement(unit.hostname)
  }

  /** Asks the agent to clean one unit and settles its answer; leaves it pending when there is none. */
  /** `stamped`: the ask is already stamped (the release did it); else it is claimed first. */
  const cleanOne = async (unit: CleaningUnit, stamped: boolean) => {
    const claimed =
      stamped ||
      (await committer.run((trx) =>
        claimCleanAttempt(trx, unit.handleId, { now: now(), staleBefore: staleBefore() }),
      ))
    if (!claimed) return
    let answer: CleanUnitResult
    try {
      answer = await agentFor(unit.hostname).cleanUnit({
        handle: { type: unit.type, info: unit.info },
        ...(unit.type === 'MDEV' ? { mdevUuid: unit.handleUuid } : {}),
        ticket: unit.allocationUuid ?? `${unit.handleUuid}@${unit.since ?? ''}`,
      })
    } catch (err) {
      const code = err instanceof AppError ? err.code : undefined
      if (code !== undefined && FINAL_CODES.has(code)) {
        await settle(unit, { kind: 'failed', method: null, reason: errorMessage(err) })
      } else {
        log.warn(
          { err, handle: unit.handleUuid, host: unit.hostname },
          'clean not done; the unit stays cleaning and is asked again',
        )
      }
      return
    }
    await settle(unit, {
      kind: 'cleaned',
      method: answer.method,
      result: answer.policy === 'none' ? 'skipped' : 'ok',
      evidenceSha256: answer.evidenceSha256,
    })
  }

  /** Syncs each host once (the units show reserved), then cleans the units side by side. */
  const dispatch = (units: readonly CleaningUnit[], stamped = false) => {
    if (units.length === 0 || stopped) return
    const hosts = new Set(units.map((u) => u.hostname))
    const run = (async () => {
      await Promise.all([...hosts].map((h) => syncPlacement(h)))
      await Promise.all(units.map((u) => cleanOne(u, stamped)))
    })().catch((err: unknown) => log.warn({ err }, 'cleaning dispatch failed; the sweep retries'))
    track(run)
  }

  const sweep = async (): Promise<number> => {
    const due = await listCleaningUnits(db.db, {
      states: ['pending'],
      attemptBefore: staleBefore(),
    })
    dispatch(due)
    return due.length
  }

  return {
    cleanReleased(handleIds) {
      const read = listCleaningUnits(db.db, { handleIds, states: ['pending'] }).then(
        (units) => dispatch(units, true),
        (err: unknown) => log.warn({ err }, 'could not read released units; the sweep retries'),
      )
      track(read)
    },
    sweep,
    async cleanDevice(req) {
      const { uuid: raw, force = false, userId = null, projectId = null } = checkDeviceClean(req)
      const deviceUuid = raw.toLowerCase()
      if (!(await getDeviceFacts(db.db, deviceUuid)))
        throw new NotFoundError(`device ${deviceUuid} not found`, { code: 'DEVICE_NOT_FOUND' })
      if (force) {
        const units = await listCleaningUnits(db.db, { deviceUuid })
        const done: string[] = []
        for (const unit of units) {
          const record = await committer.run((trx) =>
            settleClean(
              trx,
              unit,
              { kind: 'override', reason: 'force-in-service', userId, projectId },
              { now: now(), recordUuid: uuid() },
            ),
          )
          if (record !== undefined) done.push(unit.handleUuid)
        }
        log.warn(
          { device: deviceUuid, units: done, userId },
          'units put back in service without a clean (override)',
        )
        if (units.length > 0) await syncPlacement(units[0]!.hostname)
        return { device: deviceUuid, units: done, forced: true }
      }
      // By hand: ask now, whenever the last ask was, and a failed unit too.
      await committer.run((trx) => requestCleanNow(trx, deviceUuid))
      const units = await listCleaningUnits(db.db, { deviceUuid, states: ['pending'] })
      dispatch(units)
      return { device: deviceUuid, units: units.map((u) => u.handleUuid), forced: false }
    },
    async idle() {
      while (running.size > 0) await Promise.allSettled([...running])
    },
    start() {
      if (sweepMs <= 0) return
      timer = setInterval(() => {
        sweep().catch((err: unknown) =>
          log.warn({ err }, 'cleaning sweep failed; next pass retries'),
        )
      }, sweepMs)
      timer.unref()
      // Units left cleaning by a crash are asked again at start, not only after the first interval.
      track(sweep().catch((err: unknown) => log.warn({ err }, 'cleaning sweep failed')))
    },
    async stop() {
      stopped = true
      clearInterval(timer)
      // Cleans still waiting for an agent stay `cleaning` in the database: any conductor asks again.
      let grace: NodeJS.Timeout | undefined
      await Promise.race([
        Promise.allSettled([...running]),
        new Promise((r) => (grace = setTimeout(r, 2000))),
      ])
      clearTimeout(grace)
    },
  }
}
