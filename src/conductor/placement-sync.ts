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
  const { db, placement, write, clock = systemClock } = deps
  const graceMs = deps.cleaningGraceMs ?? 0
  const log = deps.log.child({ component: 'placement' })
  /** Generations this process last saw; a stale one costs a 409 and a re-read, never a wrong write. */
  const generations = new Map<string, number>()
  /** Custom classes and traits created or being created (never deleted by us); one call each per process. */
  const known = new Map<string, Promise<void>>()
  const roots = new Map<string, string>()

  const generationOf = async (uuid: string): Promise<number | undefined> => {
    const cached = generations.get(uuid)
    if (cached !== undefined) return cached
    const p = await placement.getProvider(uuid)
    if (p) generations.set(uuid, p.generation)
    return p?.generation
  }

  /** Runs a generation-checked write, re-reading the generation after each conflict. */
  const withGeneration = async (
    uuid: string,
    fn: (generation: number) => Promise<number | void>,
  ) => {
    for (let attempt = 1; ; attempt++) {
      const generation = await generationOf(uuid)
      if (generation === undefined)
        throw new NotFoundError(`resource provider ${uuid} vanished from Placement`)
      try {
        const next = await fn(generation)
        if (typeof next === 'number') generations.set(uuid, next)
        else generations.delete(uuid)
        return
      } catch (err) {
        generations.delete(uuid)
        if (!(err instanceof GenerationConflict) || attempt >= MAX_ATTEMPTS) throw err
      }
    }
  }

  /** The compute node provider: as the agent resolved it, else looked up (once per process) by name. */
  const rootUuid = async (host: string, hint?: RootHint): Promise<string> => {
    if (hint?.uuid) return hint.uuid
    const name = hint?.name ?? host
    const cached = roots.get(name)
    if (cached) return cached
    const root = await findRootProvider({
      placement,
      names: [name],
      create: deps.createRootProvider,
      log,
      backoffMs: [],
    })
    roots.set(name, root.uuid)
    return root.uuid
  }

  const ensure = (name: string, create: (name: string) => Promise<void>) => {
    let pending = known.get(name)
    if (!pending) {
      pending = create(name)
      known.set(name, pending)
      pending.catch(() => known.delete(name)) // a failure is tried again by the next sync
    }
    return pending
  }
  const ensureNames = async (writes: ProviderWrite[]) => {
    for (const w of writes) {
      const rc = w.state.resourceClass
      if (isCustomName(rc)) await ensure(`rc:${rc}`, () => placement.ensureResourceClass(rc))
      for (const t of w.state.traits)
        if (isCustomName(t)) await ensure(`trait:${t}`, () => placement.ensureTrait(t))
    }
  }

  const inventoryOf = (w: ProviderWrite): Record<string, Inventory> => ({
    [w.state.resourceClass]: {
      total: w.state.total,
      max_unit: w.state.total,
      reserved: w.state.reserved,
    },
  })

  const push = async (host: string, hint: RootHint | undefined, writes: ProviderWrite[]) => {
    await ensureNames(writes)
    for (const w of writes) {
      const exists = !w.create && (await generationOf(w.state.uuid)) !== undefined
      if (exists) continue
      const parentUuid = await rootUuid(host, hint)
      const created = await placement.createProvider({
        uuid: w.state.uuid,
        name: w.state.name,
        parentUuid,
      })
      if (created) generations.set(created.uuid, created.generation)
      else if ((await generationOf(w.state.uuid)) === undefined) {
        throw new NotFoundError(
          `Placement refused provider ${w.state.name}: the name is taken by another uuid`,
        )
      }
    }
    for (const w of writes) {
      if (!w.changes.traits) continue
      await withGeneration(w.state.uuid, (g) =>
        placement.setTraits(w.state.uuid, g, w.state.traits),
      )
    }
    writes = writes.filter((w) => w.changes.inventory)
    if (writes.length === 0) return
    if (writes.length === 1) {
      const [w] = writes as [ProviderWrite]
      await withGeneration(w.state.uuid, (g) =>
        placement.setInventory(w.state.uuid, g, inventoryOf(w)),
      )
      return
    }
    // Many providers: one reshaper call replaces all their inventories (no allocations move).
    try {
      const entries = []
      for (const w of writes) {
        const generation = await generationOf(w.state.uuid)
        if (generation === undefined)
          throw new NotFoundError(`resource provider ${w.state.uuid} vanished`)
        entries.push({ uuid: w.state.uuid, generation, inventories: inventoryOf(w) })
      }
      await placement.setInventories(entries)
      for (const w of writes) generations.delete(w.state.uuid)
    } catch (err) {
      if (!(err instanceof GenerationConflict)) throw err
      for (const w of writes) {
        generations.delete(w.state.uuid)
        await withGeneration(w.state.uuid, (g) =>
          placement.setInventory(w.state.uuid, g, inventoryOf(w)),
        )
      }
    }
  }

  /** Hosts whose sync runs, each with the follow-up sync queued behind it (the latest root hint). */
  const running = new Map<
    string,
    { queued?: { hint?: RootHint; done: Deferred<HostSyncOutcome> } }
  >()
  const syncOnce = async (host: string, hint?: RootHint): Promise<HostSyncOutcome> => {
    const outcome: HostSyncOutcome = { written: 0, deleted: 0, complete: true }
    for (let round = 1; ; round++) {
      const releasedBefore = graceMs > 0 ? clock.now().getTime() - graceMs : undefined
      const plan = planHost(await listPlacementRows(db.db, host, { releasedBefore }))
      for (const problem of plan.problems) log.warn({ host }, problem)
      if (plan.writes.length === 0 && plan.deletes.length === 0) return outcome
      if (round > MAX_ROUNDS) {
        log.warn(
          { host },
          `Placement sync still changing after ${MAX_ROUNDS} rounds; the next report continues`,
        )
        return { ...outcome, complete: false }
      }
      const marks: { id: number; hash: string | null }[] = []
      let held = false
      const writes = [...plan.writes]
      for (const d of plan.deletes) {
        const result = await placement.deleteProvider(d.uuid)
        generations.delete(d.uuid)
        if (result === 'in-use') {
          held = true
          if (d.fallback) writes.push(d.fallback)
          log.info(
            { host, deployable: d.name, rp: d.uuid },
            'provider still has allocations; removal stays pending',
          )
        } else marks.push({ id: d.id, hash: null })
      }
      const deleted = marks.length
      try {
        if (writes.length > 0) await push(host, hint, writes)
        marks.push(...writes.map((w) => ({ id: w.id, hash: w.hash })))
      } catch (err) {
        if (marks.length > 0) await write((trx) => updatePlacementHashes(trx, marks))
        throw err
      }
      await write((trx) => updatePlacementHashes(trx, marks))
      outcome.written += writes.length
      outcome.deleted += deleted
      if (held) return { ...outcome, complete: false }
    }
  }

  /** Starts the host's queued sync once the running one has ended, or marks the host idle. */
  const next = (host: string) => {
    const state = running.get(host)!
    const queued = state.queued
    if (!queued) return void running.delete(host)
    delete state.queued
    syncOnce(host, queued.hint)
      .then(queued.done.resolve, queued.done.reject)
      .finally(() => next(host))
  }

  /** Runs the host's sync now, or joins the one queued behind the running one. */
  const syncHost = async (host: string, hint?: RootHint): Promise<HostSyncOutcome> => {
    const state = running.get(host)
    if (state) {
      state.queued ??= { done: deferred<HostSyncOutcome>() }
      if (hint) state.queued.hint = hint
      return state.queued.done.promise
    }
    running.set(host, {})
    try {
      return await syncOnce(host, hint)
    } finally {
      next(host)
    }
  }

  return { syncHost }
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
