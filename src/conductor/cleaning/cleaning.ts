/**
 * Clean before reuse, the conductor's part (issue 18; docs/cleaning.md). A release leaves its
 * handle `cleaning` (src/db/attach-handles.ts); here the conductor:
 *
 * 1. asks the host's agent to clean the unit (`cleanUnit`, AgentRpc 1.5; a host's asks of a few
 *    ms, or made while its last ask is out, go as one `cleanUnits`, 1.8: clean-asks.ts) while Placement is
 *    brought in step with the host (the unit shows reserved; one coalesced sync per host, not
 *    awaited by the ask); the ask is stamped in the database (by the release itself for the first
 *    ask, else by `claimCleanAttempt` first);
 * 2. settles the answer in one transaction, shared by the answers that arrive together
 *    (clean-settle.ts; src/db/cleaning.ts): cleaned → back in service;
 *    a refusal or failure (CLEAN_UNSUPPORTED, CLEAN_FAILED, VERIFY_FAILED, CLEAN_TIMEOUT, the unit
 *    gone from the host) → `failed`, the device fenced (health `failed`, `clean failed: …`); each
 *    with its custody record and event; then syncs Placement again;
 * 3. anything else (the agent silent or restarting, CLEAN_BUSY, CLEAN_ABORTED, an agent too old)
 *    leaves the unit `cleaning`: the sweep asks again once the last ask is older than
 *    `[conductor] clean_retry_interval`, whichever conductor runs it, after any crash. A unit is
 *    never offered again before its agent has answered that it is clean (the release fence).
 *
 * Operators: `cleanDevice` re-runs the clean of a device's failed or pending units by hand, or with
 * `force` puts them back in service without one, recorded as an override with who asked. Forcing
 * skips the clean, never races it (issue 27): the host's agent is first asked to stop every clean
 * of each unit (`abortClean`, AgentRpc 1.7) and a unit goes back only once it has answered that
 * none runs; the override records whether one was stopped (`clean_aborted`). A unit whose agent
 * does not answer stays out of service, and the operator is told which host to bring back.
 */
import type { DatabaseHandle } from '../../db/core/connection.js'
import type { GroupCommitter } from '../../db/core/group-commit.js'
import {
  claimCleanAttempt,
  listCleaningUnits,
  requestCleanNow,
  type CleanSettlement,
  type CleaningUnit,
} from '../../db/cleaning.js'
import { getDeviceFacts } from '../../db/outbox/device-events.js'
import { AppError, ConflictError, NotFoundError, UnavailableError } from '../../domain/errors.js'
import { errorMessage } from '../../domain/error-message.js'
import { newUuid } from '../../domain/ids.js'
import type { Logger } from '../../domain/logger.js'
import type { Metrics } from '../../domain/metrics.js'
import { formatTimestamp, type Clock } from '../../domain/time.js'
import type { AgentRpc, CleanUnitRequest, CleanUnitResult } from '../../rpc/agent-rpc.js'
import { createCleanAsks, type CleanAgent, type CleanAsksOptions } from './clean-asks.js'
import { createCleanSettle } from './clean-settle.js'
import { createCleaningCounters, type CleaningStats } from './cleaning-stats.js'
import type { DeviceCleanOutcome } from '../../rpc/conductor-rpc.js'
import { checkDeviceClean } from '../validate.js'

/** `placementWindowMs`'s default. */
export const PLACEMENT_WINDOW_MS = 50
/**
 * How much later than the window the host's sync starts: a timer may fire a millisecond early, and
 * a unit still cleaning then must be older than the window, so that the sync reserves it.
 */
const WINDOW_SLACK_MS = 5

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
  agentFor: (host: string) => CleanAgent
  /**
   * The host's agent for `abortClean` (a force-in-service), with the ordinary RPC time limit.
   * @default agentFor
   */
  abortAgentFor?: ((host: string) => Partial<Pick<AgentRpc, 'abortClean'>>) | undefined
  /** Brings Placement in step with a host (the conductor's; a no-op without Placement). */
  syncPlacement: (host: string) => Promise<unknown>
  log: Logger
  clock: Clock
  uuid?: () => string
  /** The conductor's metrics (asks sent, units per settle, time in cleaning). @default none */
  metrics?: Metrics | undefined
}

export interface UnitCleaningOptions {
  /** `[conductor] clean_retry_interval` in ms: a unit still cleaning is asked again after it. @default 60000 */
  retryIntervalMs?: number
  /** How often the sweep looks for units to ask again; 0 for never. @default retryIntervalMs / 2 */
  sweepIntervalMs?: number
  /**
   * How long after asking for a clean the host's Placement sync starts (issue 28): a unit whose
   * clean ends sooner never shows reserved, and the releases and cleans of that window share one
   * sync. The conductor's Placement sync reserves only units cleaning for longer than this
   * (placement-sync.ts `cleaningGraceMs`). @default 50
   */
  placementWindowMs?: number
  /** How a host's asks are batched into `cleanUnits` messages (clean-asks.ts). */
  asks?: CleanAsksOptions
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
  stats(): CleaningStats
}

export function createUnitCleaning(
  deps: UnitCleaningDeps,
  options: UnitCleaningOptions = {},
): UnitCleaning {
  const { db, committer, agentFor, syncPlacement, clock, uuid = newUuid } = deps
  const abortAgentFor = deps.abortAgentFor ?? (agentFor as UnitCleaningDeps['abortAgentFor'])!
  const log = deps.log.child({ component: 'cleaning' })
  const retryMs = options.retryIntervalMs ?? 60_000
  const sweepMs = options.sweepIntervalMs ?? retryMs / 2
  const windowMs = options.placementWindowMs ?? PLACEMENT_WINDOW_MS
  const now = () => formatTimestamp(clock.now())
  const staleBefore = () => formatTimestamp(new Date(clock.now().getTime() - retryMs))
  const counters = createCleaningCounters(deps.metrics, clock)
  const asks = createCleanAsks({ agentFor, log, onSent: counters.onSent }, options.asks)
  const settler = createCleanSettle({ committer, now, uuid, log, ...counters })
  const running = new Set<Promise<unknown>>()
  let timer: NodeJS.Timeout | undefined
  let stopped = false

  const track = (p: Promise<unknown>) => {
    running.add(p)
    void p.finally(() => running.delete(p))
  }

  const settle = async (unit: CleaningUnit, outcome: CleanSettlement) => {
    const record = await settler.settle({ unit, outcome })
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
      answer = await asks.ask(unit.hostname, askOf(unit))
    } catch (err) {
      const code = err instanceof AppError ? err.code : undefined
      if (code !== undefined && FINAL_CODES.has(code)) {
        await settle(unit, { kind: 'failed', method: null, reason: errorMessage(err) })
      } else if (code === 'CLEAN_ABORTED') {
        // The operator forced this unit into service; this was the aborted release's own ask.
        log.info(
          { handle: unit.handleUuid, host: unit.hostname },
          'clean aborted by a forced return to service',
        )
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

  /**
   * Force-in-service: asks each unit's agent to stop its cleans, then puts back (override record)
   * only the units whose agent answered that none runs any more.
   * @throws ConflictError (agent too old) or UnavailableError (no answer) naming the host, for the
   *   units left out of service
   */
  const forceInService = async (
    deviceUuid: string,
    by: { userId: string | null; projectId: string | null },
  ): Promise<DeviceCleanOutcome> => {
    const units = await listCleaningUnits(db.db, { deviceUuid })
    const answers = await Promise.all(
      units.map(async (unit) => {
        try {
          const abortClean = abortAgentFor(unit.hostname).abortClean
          if (abortClean === undefined) throw new Error('this conductor cannot stop cleans')
          const { aborted } = await abortClean(askOf(unit))
          return { unit, ok: true as const, aborted: aborted === true }
        } catch (err) {
          return { unit, ok: false as const, err }
        }
      }),
    )
    // Every confirmed unit in one transaction (issue 28), not one write per unit.
    const confirmed = answers.flatMap((a) =>
      a.ok
        ? [
            {
              unit: a.unit,
              outcome: {
                kind: 'override' as const,
                reason: 'force-in-service',
                ...by,
                cleanAborted: a.aborted,
              },
            },
          ]
        : [],
    )
    const records = await settler.settleAll(confirmed)
    const unsettled = records.find((r) => r.status === 'rejected')
    const done = confirmed
      .filter((_, i) => records[i]!.status === 'fulfilled' && records[i]!.value !== undefined)
      .map((c) => c.unit.handleUuid)
    if (done.length > 0) {
      log.warn(
        { device: deviceUuid, units: done, userId: by.userId },
        'units put back in service without a clean (override)',
      )
      await syncPlacement(units[0]!.hostname)
    }
    const refused = answers.filter((a) => !a.ok)
    if (refused.length > 0) throw abortRefused(deviceUuid, refused, done)
    if (unsettled) throw unsettled.reason
    return { device: deviceUuid, units: done, forced: true }
  }

  /**
   * Cleans the units side by side while each host's Placement sync shows them reserved. The asks do
   * not wait for that sync (issue 28): the release fence in the database, not Placement, keeps a
   * cleaning unit from every bind, and a sync queued behind a busy Placement would hold the clean
   * and the unit's return for as long. The sync starts just after `placementWindowMs` and is
   * coalesced per host (placement-sync.ts); it reserves the units cleaning for longer than the
   * window (these among them, if still cleaning), never one whose clean is younger: a clean done
   * within the window costs Placement nothing, whichever sync runs meanwhile.
   */
  const dispatch = (units: readonly CleaningUnit[], stamped = false) => {
    if (units.length === 0 || stopped) return
    for (const host of new Set(units.map((u) => u.hostname)))
      track(
        new Promise((r) => setTimeout(r, windowMs + WINDOW_SLACK_MS))
          .then(() => (stopped ? undefined : syncPlacement(host)))
          .catch((err: unknown) =>
            log.warn({ err, host }, 'placement sync for a clean failed; the next sync retries'),
          ),
      )
    const run = Promise.all(units.map((u) => cleanOne(u, stamped))).catch((err: unknown) =>
      log.warn({ err }, 'cleaning dispatch failed; the sweep retries'),
    )
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
      if (force) return forceInService(deviceUuid, { userId, projectId })
      // By hand: ask now, whenever the last ask was, and a failed unit too.
      await committer.run((trx) => requestCleanNow(trx, deviceUuid))
      const units = await listCleaningUnits(db.db, { deviceUuid, states: ['pending'] })
      dispatch(units)
      return { device: deviceUuid, units: units.map((u) => u.handleUuid), forced: false }
    },
    stats: counters.stats,
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

/** What the agent is asked about a unit (`cleanUnit`, `abortClean`): its handle and its release. */
function askOf(unit: CleaningUnit): CleanUnitRequest {
  return {
    handle: { type: unit.type, info: unit.info },
    ...(unit.type === 'MDEV' ? { mdevUuid: unit.handleUuid } : {}),
    ticket: unit.allocationUuid ?? `${unit.handleUuid}@${unit.since ?? ''}`,
  }
}

/** The operator's error for units a force left out of service: which host, and what to do. */
function abortRefused(
  deviceUuid: string,
  refused: readonly { unit: CleaningUnit; err: unknown }[],
  forced: readonly string[],
): AppError {
  const host = refused[0]!.unit.hostname
  const units = refused.map((r) => r.unit.handleUuid)
  const details = { device: deviceUuid, host, units, forced }
  const also = forced.length > 0 ? `; put back in service: ${forced.join(', ')}` : ''
  const tooOld = refused.find((r) => r.err instanceof AppError && r.err.code === 'RPC_NO_METHOD')
  if (tooOld)
    return new ConflictError(
      `the agent on host ${host} cannot stop a clean (it is older than agent RPC 1.7): unit(s) ${units.join(', ')} stay out of service; upgrade the agent on ${host}, or let its clean end and run the command again${also}`,
      { code: 'CLEAN_ABORT_UNSUPPORTED', details },
    )
  return new UnavailableError(
    `the agent on host ${host} did not confirm that no clean runs on unit(s) ${units.join(', ')} (${errorMessage(refused[0]!.err)}): they stay out of service; start the agent on ${host} and run the command again${also}`,
    { code: 'CLEAN_ABORT_UNCONFIRMED', details },
  )
}
