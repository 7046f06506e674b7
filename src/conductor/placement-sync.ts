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
 * Module functions over `SyncState` (the dependencies and what this process remembers); the factory only wires.
 */
import type { DatabaseHandle } from '../db/core/connection.js'
import { listPlacementRows, updatePlacementHashes } from '../db/placement-rows.js'
import type { WriteRunner } from '../db/core/group-commit.js'
import { NotFoundError } from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'
import { systemClock, type Clock } from '../domain/time.js'
import { isCustomName } from '../domain/placement.js'
import { GenerationConflict, type Inventory, type PlacementClient } from '../openstack/placement.js'
import { findRootProvider } from '../openstack/root-provider.js'
import { planHost, type ProviderWrite } from './placement-plan.js'

/** Sync rounds per call: the first, plus re-runs when the rows changed while it wrote. */
const MAX_ROUNDS = 3
/** Attempts of one generation-checked write. */
const MAX_ATTEMPTS = 5

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
  /** The clock releases are stamped with (`clean_since`). @default the system clock */
  clock?: Clock | undefined
}

/** The compute node provider a host's deployables hang under, as the agent resolved it. */
export interface RootHint {
  name: string
  uuid?: string | undefined
}

export interface HostSyncOutcome {
  written: number
  deleted: number
  /** False when something is left for a later sync (Placement down, a provider still in use). */
  complete: boolean
}

export interface PlacementSync {
  syncHost(host: string, root?: RootHint): Promise<HostSyncOutcome>
}

export function createPlacementSync(deps: PlacementSyncDeps): PlacementSync {
  const s: SyncState = {
    db: deps.db,
    placement: deps.placement,
    write: deps.write,
    log: deps.log.child({ component: 'placement' }),
    clock: deps.clock ?? systemClock,
    graceMs: deps.cleaningGraceMs ?? 0,
    createRootProvider: deps.createRootProvider,
    generations: new Map(),
    known: new Map(),
    roots: new Map(),
    running: new Map(),
  }
  return { syncHost: (host, hint) => syncHost(s, host, hint) }
}

/** What the sync's steps share: its dependencies, defaults applied, and what this process remembers. */
interface SyncState {
  db: DatabaseHandle
  placement: PlacementClient
  write: WriteRunner
  /** The `placement` component's logger. */
  log: Logger
  clock: Clock
  /** `cleaningGraceMs`, 0 when unset. */
  graceMs: number
  createRootProvider: boolean
  /** Generations this process last saw; a stale one costs a 409 and a re-read, never a wrong write. */
  generations: Map<string, number>
  /** Custom classes and traits created or being created (never deleted by us); one call each per process. */
  known: Map<string, Promise<void>>
  /** Compute node provider uuids looked up by name. */
  roots: Map<string, string>
  /** Hosts whose sync runs, each with the follow-up sync queued behind it (the latest root hint). */
  running: Map<string, HostRun>
}

interface HostRun {
  queued?: { hint?: RootHint; done: Deferred<HostSyncOutcome> }
}

async function generationOf(s: SyncState, uuid: string): Promise<number | undefined> {
  const cached = s.generations.get(uuid)
  if (cached !== undefined) return cached
  const p = await s.placement.getProvider(uuid)
  if (p) s.generations.set(uuid, p.generation)
  return p?.generation
}

/** Runs a generation-checked write, re-reading the generation after each conflict. */
async function withGeneration(
  s: SyncState,
  uuid: string,
  fn: (generation: number) => Promise<number | void>,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const generation = await generationOf(s, uuid)
    if (generation === undefined)
      throw new NotFoundError(`resource provider ${uuid} vanished from Placement`)
    try {
      const next = await fn(generation)
      if (typeof next === 'number') s.generations.set(uuid, next)
      else s.generations.delete(uuid)
      return
    } catch (err) {
      s.generations.delete(uuid)
      if (!(err instanceof GenerationConflict) || attempt >= MAX_ATTEMPTS) throw err
    }
  }
}

/** The compute node provider: as the agent resolved it, else looked up (once per process) by name. */
async function rootUuid(s: SyncState, host: string, hint?: RootHint): Promise<string> {
  if (hint?.uuid) return hint.uuid
  const name = hint?.name ?? host
  const cached = s.roots.get(name)
  if (cached) return cached
  const root = await findRootProvider({
    placement: s.placement,
    names: [name],
    create: s.createRootProvider,
    log: s.log,
    backoffMs: [],
  })
  s.roots.set(name, root.uuid)
  return root.uuid
}

function ensure(
  s: SyncState,
  name: string,
  create: (name: string) => Promise<void>,
): Promise<void> {
  let pending = s.known.get(name)
  if (!pending) {
    pending = create(name)
    s.known.set(name, pending)
    pending.catch(() => s.known.delete(name)) // a failure is tried again by the next sync
  }
  return pending
}

async function ensureNames(s: SyncState, writes: ProviderWrite[]): Promise<void> {
  for (const w of writes) {
    const rc = w.state.resourceClass
    if (isCustomName(rc)) await ensure(s, `rc:${rc}`, () => s.placement.ensureResourceClass(rc))
    for (const t of w.state.traits)
      if (isCustomName(t)) await ensure(s, `trait:${t}`, () => s.placement.ensureTrait(t))
  }
}

function inventoryOf(w: ProviderWrite): Record<string, Inventory> {
  return {
    [w.state.resourceClass]: {
      total: w.state.total,
      max_unit: w.state.total,
      reserved: w.state.reserved,
    },
  }
}

/** Writes the providers' custom names, missing providers, traits and inventories, in that order. */
async function push(
  s: SyncState,
  host: string,
  hint: RootHint | undefined,
  writes: ProviderWrite[],
): Promise<void> {
  await ensureNames(s, writes)
  await createMissing(s, host, hint, writes)
  for (const w of writes) {
    if (!w.changes.traits) continue
    await withGeneration(s, w.state.uuid, (g) =>
      s.placement.setTraits(w.state.uuid, g, w.state.traits),
    )
  }
  await writeInventories(
    s,
    writes.filter((w) => w.changes.inventory),
  )
}

/** Creates the providers that are new, or that Placement no longer has, under the compute node. */
async function createMissing(
  s: SyncState,
  host: string,
  hint: RootHint | undefined,
  writes: ProviderWrite[],
): Promise<void> {
  for (const w of writes) {
    const exists = !w.create && (await generationOf(s, w.state.uuid)) !== undefined
    if (exists) continue
    const parentUuid = await rootUuid(s, host, hint)
    const created = await s.placement.createProvider({
      uuid: w.state.uuid,
      name: w.state.name,
      parentUuid,
    })
    if (created) s.generations.set(created.uuid, created.generation)
    else if ((await generationOf(s, w.state.uuid)) === undefined) {
      throw new NotFoundError(
        `Placement refused provider ${w.state.name}: the name is taken by another uuid`,
      )
    }
  }
}

/** Writes the inventories of `writes` (those whose inventory changed). */
async function writeInventories(s: SyncState, writes: ProviderWrite[]): Promise<void> {
  if (writes.length === 0) return
  if (writes.length === 1) {
    const [w] = writes as [ProviderWrite]
    await withGeneration(s, w.state.uuid, (g) =>
      s.placement.setInventory(w.state.uuid, g, inventoryOf(w)),
    )
    return
  }
  // Many providers: one reshaper call replaces all their inventories (no allocations move).
  try {
    const entries = []
    for (const w of writes) {
      const generation = await generationOf(s, w.state.uuid)
      if (generation === undefined)
        throw new NotFoundError(`resource provider ${w.state.uuid} vanished`)
      entries.push({ uuid: w.state.uuid, generation, inventories: inventoryOf(w) })
    }
    await s.placement.setInventories(entries)
    for (const w of writes) s.generations.delete(w.state.uuid)
  } catch (err) {
    if (!(err instanceof GenerationConflict)) throw err
    for (const w of writes) {
      s.generations.delete(w.state.uuid)
      await withGeneration(s, w.state.uuid, (g) =>
        s.placement.setInventory(w.state.uuid, g, inventoryOf(w)),
      )
    }
  }
}

/** One sync of a host: rounds of plan, delete and write until the rows stop changing (or MAX_ROUNDS). */
async function syncOnce(s: SyncState, host: string, hint?: RootHint): Promise<HostSyncOutcome> {
  const outcome: HostSyncOutcome = { written: 0, deleted: 0, complete: true }
  for (let round = 1; ; round++) {
    const releasedBefore = s.graceMs > 0 ? s.clock.now().getTime() - s.graceMs : undefined
    const plan = planHost(await listPlacementRows(s.db.db, host, { releasedBefore }))
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
