/**
 * Keeps Placement in step with one host's deployables (cyborg-v2-facts §4.2, with its gaps fixed):
 * one child provider per deployable under the compute node, inventory with `reserved = total`
 * while a device is not offered, traits, and custom classes and traits created as needed.
 *
 * - Only what changed is sent: each deployable keeps the hash of the provider state last
 *   confirmed written (`placement_hash`, in two halves: inventory, traits); a host whose hashes all
 *   match costs no call, and a provider whose traits alone changed gets no inventory write.
 * - Writes carry the provider generation; a 409 re-reads it and retries.
 * - A provider is deleted only when nothing in Cyborg holds its deployable; Placement refuses
 *   while allocations remain (409), and the deletion waits for a later sync.
 * - After writing, the sync re-reads the rows and goes again if they changed meanwhile (another
 *   conductor, an operator), so the last writer always leaves Placement matching the database.
 * - One sync per host at a time (issue 28): a call made while the host's sync runs waits for one
 *   follow-up sync that starts after it and reads the rows afresh; every call made meanwhile shares
 *   that follow-up. Releases, cleans and reports of one host under turnover thus cost one write per
 *   round, not one (and a generation conflict with each other) per change.
 * - A unit cleaning for less than `cleaningGraceMs` is not reserved yet (issue 28): under turnover
 *   some unit of a host is always a few ms into its clean (or its `clean = none` answer), and
 *   counting it cost two inventory writes per release; the unit is fenced by the database either
 *   way (docs/cleaning.md).
 * - Units cleaning stay reserved for `cleaningHoldMs` after their count falls (placement-hold.ts):
 *   under steady turnover the count moves with every release and answer, and following it cost two
 *   inventory writes per release. A host whose lower count is held is synced again when the hold
 *   ends, so Placement comes back to the database's count by itself.
 * Module functions over `SyncState` (the dependencies and what this process remembers); the factory only wires.
 */
import type { DatabaseHandle } from '../../db/core/connection.js'
import { listPlacementRows, updatePlacementHashes } from '../../db/placement-rows.js'
import type { WriteRunner } from '../../db/core/group-commit.js'
import type { Logger } from '../../domain/logger.js'
import { systemClock, type Clock } from '../../domain/time.js'
import type { PlacementClient } from '../../openstack/placement.js'
import { applyCleaningHold, type CleaningHold } from './placement-hold.js'
import { planHost } from './placement-plan.js'
import { push, type RootHint, type WriteState } from './placement-writes.js'

export type { RootHint } from './placement-writes.js'

/** Sync rounds per call: the first, plus re-runs when the rows changed while it wrote. */
const MAX_ROUNDS = 3

export interface PlacementSyncDeps {
  db: DatabaseHandle
  placement: PlacementClient
  /** The conductor's group committer. */
  write: WriteRunner
  log: Logger
  /** `[placement] create_root_provider`. */
  createRootProvider: boolean
  /**
   * How long a unit must have been cleaning before the sync shows it reserved (issue 28): the
   * conductor's Placement window, so that a clean over within it never costs an inventory write.
   * Failed cleans, programs and configures are reserved at once. @default 0 (every clean)
   */
  cleaningGraceMs?: number | undefined
  /**
   * How long Placement keeps showing units reserved for their clean after the count of units
   * cleaning falls (placement-hold.ts; `[conductor] clean_placement_hold_ms`). 0: lowered at
   * once. @default 0
   */
  cleaningHoldMs?: number | undefined
  /** The clock releases are stamped with (`clean_since`). @default the system clock */
  clock?: Clock | undefined
}

export interface HostSyncOutcome {
  written: number
  deleted: number
  /** False when something is left for a later sync (Placement down, a provider still in use). */
  complete: boolean
}

export interface PlacementSync {
  syncHost(host: string, root?: RootHint): Promise<HostSyncOutcome>
  /** Cancels the syncs due when holds end (the conductor's stop). */
  stop(): void
}

export function createPlacementSync(deps: PlacementSyncDeps): PlacementSync {
  const s: SyncState = {
    db: deps.db,
    placement: deps.placement,
    write: deps.write,
    log: deps.log.child({ component: 'placement' }),
    clock: deps.clock ?? systemClock,
    graceMs: deps.cleaningGraceMs ?? 0,
    holdMs: deps.cleaningHoldMs ?? 0,
    holds: new Map(),
    rechecks: new Map(),
    createRootProvider: deps.createRootProvider,
    generations: new Map(),
    known: new Map(),
    roots: new Map(),
    running: new Map(),
  }
  return {
    syncHost: (host, hint) => syncHost(s, host, hint),
    stop() {
      s.stopped = true
      for (const r of s.rechecks.values()) clearTimeout(r.timer)
      s.rechecks.clear()
    },
  }
}

/** What the sync's steps share: its dependencies, defaults applied, and what this process remembers. */
interface SyncState extends WriteState {
  db: DatabaseHandle
  write: WriteRunner
  clock: Clock
  /** `cleaningGraceMs`, 0 when unset. */
  graceMs: number
  /** `cleaningHoldMs`, 0 when unset. */
  holdMs: number
  /** The cleaning holds, per deployable id (placement-hold.ts). */
  holds: Map<number, CleaningHold>
  /** Per host, the sync due when its earliest hold ends. */
  rechecks: Map<string, { at: number; timer: NodeJS.Timeout }>
  stopped?: boolean
  /** Hosts whose sync runs, each with the follow-up sync queued behind it (the latest root hint). */
  running: Map<string, HostRun>
}

interface HostRun {
  queued?: { hint?: RootHint; done: Deferred<HostSyncOutcome> }
}

/** One sync of a host: rounds of plan, delete and write until the rows stop changing (or MAX_ROUNDS). */
async function syncOnce(s: SyncState, host: string, hint?: RootHint): Promise<HostSyncOutcome> {
  const outcome: HostSyncOutcome = { written: 0, deleted: 0, complete: true }
  for (let round = 1; ; round++) {
    const nowMs = s.clock.now().getTime()
    const releasedBefore = s.graceMs > 0 ? nowMs - s.graceMs : undefined
    const live = await listPlacementRows(s.db.db, host, { releasedBefore })
    const withHolds = applyCleaningHold(live, s.holds, nowMs, s.holdMs)
    if (withHolds.recheckAt !== undefined) recheckAt(s, host, withHolds.recheckAt)
    const plan = planHost(withHolds.rows)
    for (const problem of plan.problems) s.log.warn({ host }, problem)
    if (plan.writes.length === 0 && plan.deletes.length === 0) return outcome
    if (round > MAX_ROUNDS) {
      s.log.warn(
        { host },
        `Placement sync still changing after ${MAX_ROUNDS} rounds; the next report continues`,
      )
      return { ...outcome, complete: false }
    }
    const marks: { id: number; hash: string | null }[] = []
    let held = false
    const writes = [...plan.writes]
    for (const d of plan.deletes) {
      const result = await s.placement.deleteProvider(d.uuid)
      s.generations.delete(d.uuid)
      if (result === 'in-use') {
        held = true
        if (d.fallback) writes.push(d.fallback)
        s.log.info(
          { host, deployable: d.name, rp: d.uuid },
          'provider still has allocations; removal stays pending',
        )
      } else marks.push({ id: d.id, hash: null })
    }
    const deleted = marks.length
    try {
      if (writes.length > 0) await push(s, host, hint, writes)
      marks.push(...writes.map((w) => ({ id: w.id, hash: w.hash })))
    } catch (err) {
      if (marks.length > 0) await s.write((trx) => updatePlacementHashes(trx, marks))
      throw err
    }
    await s.write((trx) => updatePlacementHashes(trx, marks))
    outcome.written += writes.length
    outcome.deleted += deleted
    if (held) return { ...outcome, complete: false }
  }
}

/** Syncs `host` again at `at` (when a hold ends), unless a sync is due for it sooner. */
function recheckAt(s: SyncState, host: string, at: number): void {
  const due = s.rechecks.get(host)
  if (s.stopped || (due !== undefined && due.at <= at)) return
  if (due) clearTimeout(due.timer)
  const delayMs = Math.max(0, at - s.clock.now().getTime()) + 1
  const timer = setTimeout(() => {
    s.rechecks.delete(host)
    syncHost(s, host).catch((err: unknown) =>
      s.log.warn(
        { err, host },
        'placement sync after a cleaning hold failed; the next sync retries',
      ),
    )
  }, delayMs)
  timer.unref()
  s.rechecks.set(host, { at, timer })
}

/** Starts the host's queued sync once the running one has ended, or marks the host idle. */
function next(s: SyncState, host: string): void {
  const state = s.running.get(host)!
  const queued = state.queued
  if (!queued) return void s.running.delete(host)
  delete state.queued
  syncOnce(s, host, queued.hint)
    .then(queued.done.resolve, queued.done.reject)
    .finally(() => next(s, host))
}

/** Runs the host's sync now, or joins the one queued behind the running one. */
async function syncHost(s: SyncState, host: string, hint?: RootHint): Promise<HostSyncOutcome> {
  const state = s.running.get(host)
  if (state) {
    state.queued ??= { done: deferred<HostSyncOutcome>() }
    if (hint) state.queued.hint = hint
    return state.queued.done.promise
  }
  s.running.set(host, {})
  try {
    return await syncOnce(s, host, hint)
  } finally {
    next(s, host)
  }
}

interface Deferred<T> {
  promise: Promise<T>
  resolve(value: T): void
  reject(err: unknown): void
}

function deferred<T>(): Deferred<T> {
  const d = {} as Deferred<T>
  d.promise = new Promise<T>((resolve, reject) => Object.assign(d, { resolve, reject }))
  return d
}
