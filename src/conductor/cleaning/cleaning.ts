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
 * does not answer stays out of service, and the operator is told which host to bring back
 * (clean-force.ts).
 *
 * `createUnitCleaning` only wires; the steps are module functions over `CleaningState`.
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
import { AppError, NotFoundError } from '../../domain/errors.js'
import { errorMessage } from '../../domain/error-message.js'
import { newUuid } from '../../domain/ids.js'
import type { Logger } from '../../domain/logger.js'
import type { Metrics } from '../../domain/metrics.js'
import { formatTimestamp, type Clock } from '../../domain/time.js'
import type { AgentRpc, CleanUnitResult } from '../../rpc/agent-rpc.js'
import {
  createCleanAsks,
  type CleanAgent,
  type CleanAsks,
  type CleanAsksOptions,
} from './clean-asks.js'
import { createCleanSettle, type CleanSettle } from './clean-settle.js'
import { askOf, forceInService, type ForceInServiceDeps } from './clean-force.js'
import { createCleaningCounters, type CleaningStats } from './cleaning-stats.js'
import type { DeviceCleanOutcome } from '../../rpc/conductor-rpc.js'
import { checkDeviceClean } from '../validate.js'

/** `placementWindowMs`'s default. */
export const PLACEMENT_WINDOW_MS = 50
/** `placementHoldMs`'s default (`[conductor] clean_placement_hold_ms`). */
export const PLACEMENT_HOLD_MS = 1000
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
  /**
   * How long Placement keeps units reserved for their clean after the count of units cleaning
   * falls (placement-hold.ts; `[conductor] clean_placement_hold_ms`): steady turnover costs no
   * inventory write per release. @default 1000
   */
  placementHoldMs?: number
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

/** What the functions below share: the deps, resolved, and the state of this conductor's cleans. */
interface CleaningState extends ForceInServiceDeps {
  committer: Pick<GroupCommitter, 'run'>
  windowMs: number
  now: () => string
  /** The conductor's clock, epoch ms. */
  nowMs: () => number
  /** The time before which an ask is old enough to be made again. */
  staleBefore: () => string
  asks: CleanAsks
  settler: CleanSettle
  /** The cleans, syncs and reads this conductor started and has not seen end (`idle`, `stop`). */
  running: Set<Promise<unknown>>
  /** Set by `stop()`: nothing more is dispatched, no delayed sync runs. */
  stopped: boolean
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
  const s: CleaningState = {
    db,
    committer,
    abortAgentFor,
    syncPlacement: (host) => {
      counters.onPlacementSync()
      return syncPlacement(host)
    },
    log,
    windowMs,
    now,
    nowMs: () => clock.now().getTime(),
    staleBefore,
    asks,
    settler,
    running: new Set(),
    stopped: false,
  }
  let timer: NodeJS.Timeout | undefined

  return {
    cleanReleased(handleIds) {
      const read = listCleaningUnits(db.db, { handleIds, states: ['pending'] }).then(
        (units) => dispatch(s, units, true),
        (err: unknown) => log.warn({ err }, 'could not read released units; the sweep retries'),
      )
      track(s, read)
    },
    sweep: () => sweepDue(s),
    async cleanDevice(req) {
      const { uuid: raw, force = false, userId = null, projectId = null } = checkDeviceClean(req)
      const deviceUuid = raw.toLowerCase()
      if (!(await getDeviceFacts(db.db, deviceUuid)))
        throw new NotFoundError(`device ${deviceUuid} not found`, { code: 'DEVICE_NOT_FOUND' })
      if (force) return forceInService(s, deviceUuid, { userId, projectId })
      // By hand: ask now, whenever the last ask was, and a failed unit too.
      await committer.run((trx) => requestCleanNow(trx, deviceUuid))
      const units = await listCleaningUnits(db.db, { deviceUuid, states: ['pending'] })
      dispatch(s, units)
      return { device: deviceUuid, units: units.map((u) => u.handleUuid), forced: false }
    },
    stats: counters.stats,
    async idle() {
      while (s.running.size > 0) await Promise.allSettled([...s.running])
    },
    start() {
      if (sweepMs <= 0) return
      timer = setInterval(() => {
        sweepDue(s).catch((err: unknown) =>
          log.warn({ err }, 'cleaning sweep failed; next pass retries'),
        )
      }, sweepMs)
      timer.unref()
      // Units left cleaning by a crash are asked again at start, not only after the first interval.
      track(
        s,
        sweepDue(s).catch((err: unknown) => log.warn({ err }, 'cleaning sweep failed')),
      )
    },
    async stop() {
      s.stopped = true
      clearInterval(timer)
      // Cleans still waiting for an agent stay `cleaning` in the database: any conductor asks again.
      let grace: NodeJS.Timeout | undefined
      await Promise.race([
        Promise.allSettled([...s.running]),
        new Promise((r) => (grace = setTimeout(r, 2000))),
      ])
      clearTimeout(grace)
    },
  }
}

function track(s: CleaningState, p: Promise<unknown>): void {
  s.running.add(p)
  void p.finally(() => s.running.delete(p))
}

async function settle(
  s: CleaningState,
  unit: CleaningUnit,
  outcome: CleanSettlement,
): Promise<void> {
  const { log, syncPlacement } = s
  const record = await s.settler.settle({ unit, outcome })
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
  if (outcome.kind === 'failed' || !neverCounted(s, unit)) await syncPlacement(unit.hostname)
}

/**
 * A unit back within half the window of its release: no sync can have shown it reserved (each
 * counts only units released longer than the window ago; docs/cleaning.md), so its return changes
 * nothing in Placement and costs no sync. Half, not all, of the window: another conductor's sync,
 * on a clock a little ahead, could have counted it a little sooner.
 */
function neverCounted(s: CleaningState, unit: CleaningUnit): boolean {
  return unit.since !== null && s.nowMs() - Date.parse(unit.since) < s.windowMs / 2
}

/** Asks the agent to clean one unit and settles its answer; leaves it pending when there is none. */
/** `stamped`: the ask is already stamped (the release did it); else it is claimed first. */
/** Resolves true once the unit is settled (back in service, or failed and fenced). */
async function cleanOne(s: CleaningState, unit: CleaningUnit, stamped: boolean): Promise<boolean> {
  const { committer, log, now, staleBefore } = s
  const claimed =
    stamped ||
    (await committer.run((trx) =>
      claimCleanAttempt(trx, unit.handleId, { now: now(), staleBefore: staleBefore() }),
    ))
  if (!claimed) return false
  let answer: CleanUnitResult
  try {
    answer = await s.asks.ask(unit.hostname, askOf(unit))
  } catch (err) {
    const code = err instanceof AppError ? err.code : undefined
    if (code !== undefined && FINAL_CODES.has(code)) {
      await settle(s, unit, { kind: 'failed', method: null, reason: errorMessage(err) })
      return true
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
    return false
  }
  await settle(s, unit, {
    kind: 'cleaned',
    method: answer.method,
    result: answer.policy === 'none' ? 'skipped' : 'ok',
    evidenceSha256: answer.evidenceSha256,
  })
  return true
}

/**
 * Cleans the units side by side while each host's Placement sync shows them reserved. The asks do
 * not wait for that sync (issue 28): the release fence in the database, not Placement, keeps a
 * cleaning unit from every bind, and a sync queued behind a busy Placement would hold the clean
 * and the unit's return for as long. The sync starts just after `placementWindowMs` and is
 * coalesced per host (placement-sync.ts); it reserves the units cleaning for longer than the
 * window (these among them, if still cleaning), never one whose clean is younger: a clean done
 * within the window costs Placement nothing, whichever sync runs meanwhile. The window's sync is
 * skipped when every unit of the host is settled by then, and so is the answer's for a unit back
 * within half the window (`neverCounted`): neither has anything to change.
 */
function dispatch(s: CleaningState, units: readonly CleaningUnit[], stamped = false): void {
  const { log, syncPlacement } = s
  if (units.length === 0 || s.stopped) return
  // Units not settled yet: the window's sync of a host whose units are all back has nothing to show.
  const open = new Set(units.map((u) => u.handleId))
  const stillOpen = (host: string) => units.some((u) => u.hostname === host && open.has(u.handleId))
  for (const host of new Set(units.map((u) => u.hostname)))
    track(
      s,
      new Promise((r) => setTimeout(r, s.windowMs + WINDOW_SLACK_MS))
        .then(() => (s.stopped || !stillOpen(host) ? undefined : syncPlacement(host)))
        .catch((err: unknown) =>
          log.warn({ err, host }, 'placement sync for a clean failed; the next sync retries'),
        ),
    )
  const run = Promise.all(
    units.map(async (u) => {
      if (await cleanOne(s, u, stamped)) open.delete(u.handleId)
    }),
  ).catch((err: unknown) => log.warn({ err }, 'cleaning dispatch failed; the sweep retries'))
  track(s, run)
}

/** One sweep: dispatches the units whose last ask is older than the retry interval. */
async function sweepDue(s: CleaningState): Promise<number> {
  const due = await listCleaningUnits(s.db.db, {
    states: ['pending'],
    attemptBefore: s.staleBefore(),
  })
  dispatch(s, due)
  return due.length
}
